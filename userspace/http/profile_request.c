// SPDX-License-Identifier: BSD-2-Clause
/*
 * One ad hoc profile request end to end: the processes to sample, the
 * slot (409 when busy), a recording of its own (recording.h) that blocks
 * this connection's thread for the duration, and the answer: pprof (raw or
 * gzip) or an SVG flamegraph, 204 when cancelled by DELETE. While it
 * records, the client's socket is watched: a requester that disconnects
 * ends the recording, so nobody keeps the sampler busy for nothing.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "formats/flamegraph.h"
#include "http_internal.h"
#include "util/log.h"
#include "formats/pprof.h"
#include "pipeline/recording.h"

static const char *const end_names[] = {
	[ADHOC_DONE] = "",
	[ADHOC_CANCELLED] = " (cancelled by DELETE)",
	[ADHOC_FORCED] = " (ended early by a forced request)",
	[ADHOC_SHUTDOWN] = " (ended early: the server stops)",
	[ADHOC_CLIENT_GONE] = " (the client disconnected)",
};

struct watch {
	int fd; /* the requester's socket, -1 if unknown */
	struct adhoc_state *a;
	bool gone;
};

/* Called about every 250 ms by the recording: is the requester still there? */
static void watch_client(const struct recording_progress *p, void *ctx)
{
	struct watch *w = ctx;
	struct pollfd pfd = { .fd = w->fd, .events = POLLRDHUP };

	(void)p;
	if (w->fd < 0 || w->gone)
		return;
	if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
		w->gone = true;
		adhoc_cancel(w->a, ADHOC_CLIENT_GONE);
	}
}

static int encode_svg(const struct profile *p, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
	struct flamegraph_opts fo = { .title = "ebprof ad hoc CPU profile" };
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	int ret;

	if (!f) {
		snprintf(err, errlen, "cannot draw the flamegraph: %s", strerror(errno));
		return -ENOMEM;
	}
	ret = flamegraph_write(p, &fo, f, err, errlen);
	if (fclose(f) && !ret) {
		snprintf(err, errlen, "cannot draw the flamegraph: out of memory");
		ret = -ENOMEM;
	}
	if (ret) {
		free(text);
		return ret;
	}
	*buf = (uint8_t *)text;
	*len = n;
	return 0;
}

static enum MHD_Result send_profile(struct http_server *s, struct http_req *rq,
				    struct MHD_Connection *c, const struct adhoc_request *r,
				    const struct profile *p)
{
	static const char *const raw_hdrs[] = { MHD_HTTP_HEADER_CONTENT_DISPOSITION,
						"attachment; filename=\"profile.pb\"", NULL };
	static const char *const gz_hdrs[] = { MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					       "attachment; filename=\"profile.pb.gz\"", NULL };
	const char *const *hdrs = NULL;
	const char *ctype = "application/octet-stream";
	char err[512] = "";
	uint8_t *buf = NULL;
	size_t len = 0;
	int ret;

	switch (r->format) {
	case FMT_PPROF:
		ret = pprof_encode(p, false, &buf, &len);
		hdrs = raw_hdrs;
		break;
	case FMT_PPROF_GZIP:
		ret = pprof_encode(p, true, &buf, &len);
		hdrs = gz_hdrs;
		/* The compute API's archive is application/gzip; pprof
		 * endpoints answer application/octet-stream like Go's. */
		if (r->style == STYLE_STRING)
			ctype = "application/gzip";
		break;
	default:
		ret = encode_svg(p, &buf, &len, err, sizeof(err));
		ctype = "image/svg+xml";
		break;
	}
	if (ret) {
		if (!err[0])
			snprintf(err, sizeof(err), "cannot encode the profile: %s", strerror(-ret));
		log_error("http: %s: %s", r->what, err);
		return http_send_msg(s, rq, c, 500, r->style, "%s", err);
	}
	return http_send(s, rq, c, 200, ctype, buf, len, true, hdrs);
}

static void fill_opts(struct http_server *s, const struct adhoc_request *r,
		      const struct adhoc_targets *t, struct watch *w, struct recording_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->frequency = r->frequency;
	o->duration_s = r->seconds;
	o->kernel = s->kernel;
	o->user = s->user;
	o->btf_path = s->btf;
	o->inherit = true;
	o->prewarm = true;
	o->comment = r->what;
	o->stop = &s->adhoc.stop;
	o->on_progress = watch_client;
	o->ctx = w;
	if (t->narrowed) {
		o->pids = t->pids;
		o->npids = t->npids;
		return;
	}
	o->pids = s->pids;
	o->npids = s->npids;
	o->comms = (const char *const *)s->comms;
	o->ncomms = s->ncomms;
	o->cgroups = (const char *const *)s->cgroups;
	o->ncgroups = s->ncgroups;
}

enum MHD_Result http_profile_serve(struct http_server *s, struct http_req *rq,
				   struct MHD_Connection *c, const struct adhoc_request *r)
{
	const union MHD_ConnectionInfo *ci;
	struct watch w = { .fd = -1, .a = &s->adhoc };
	struct recording_result res;
	struct recording_opts o;
	struct adhoc_targets t;
	char msg[HTTP_MSG_LEN];
	enum MHD_Result mr;
	enum adhoc_end end;
	int ret, status;

	status = http_targets_resolve(s, r, &t, msg, sizeof(msg));
	if (status)
		return http_send_msg(s, rq, c, status, r->style, "%s", msg);
	ret = adhoc_claim(&s->adhoc, r->force);
	if (ret) {
		free(t.pids);
		if (ret == -ESHUTDOWN)
			return http_send_msg(s, rq, c, 503, r->style, "the agent is shutting down");
		if (r->style == STYLE_STRING)
			return http_send_msg(s, rq, c, 409, r->style,
					     "Profiling is already in progress.");
		return http_send_msg(
			s, rq, c, 409, r->style,
			"Conflict: profiler already running (use ?force=true to cancel it)");
	}
	rq->claimed = true;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		w.fd = ci->connect_fd;
	log_info("http: %s: ad hoc profile at %d Hz for %d s%s", r->what, r->frequency, r->seconds,
		 t.narrowed ? " of the selected processes" : "");
	fill_opts(s, r, &t, &w, &o);
	ret = recording_run(&o, &res, msg, sizeof(msg));
	end = adhoc_release(&s->adhoc);
	free(t.pids);

	if (end == ADHOC_CLIENT_GONE) {
		log_info("http: %s: the client disconnected, profile dropped", r->what);
		mr = MHD_NO;
	} else if (end == ADHOC_CANCELLED) {
		log_info("http: %s: cancelled by DELETE /profile/cpu", r->what);
		/* HTTP sends no body with 204; the message is for the logs and
		 * for clients of the compute API that read it anyway. */
		mr = http_send_msg(s, rq, c, 204, r->style,
				   "Profiling was cancelled from another request.");
	} else if (ret) {
		status = ret == -ESRCH ? 404 : 500;
		/* recording.c words it for the command line (-p, --comm). */
		if (ret == -ESRCH && !t.narrowed)
			snprintf(msg, sizeof(msg),
				 "no target process: none of the agent's target processes runs");
		if (status == 500)
			log_error("http: %s: %s", r->what, msg);
		else
			log_info("http: %s: %s", r->what, msg);
		mr = http_send_msg(s, rq, c, status, r->style, "%s", msg);
	} else {
		log_info("http: %s: %llu samples of %lu processes in %.1f s%s", r->what,
			 (unsigned long long)res.stats.v[STAT_SAMPLES], res.processes,
			 res.elapsed_s, end_names[end]);
		mr = send_profile(s, rq, c, r, res.profile);
	}
	if (!ret)
		profile_free(res.profile);
	return mr;
}
