// SPDX-License-Identifier: BSD-2-Clause
/*
 * One ad hoc profile request end to end: the processes to sample, the
 * slot (409 when busy), a session of its own (pipeline/session.h) that runs
 * on a job's thread (jobs.c) for the duration while the connection is
 * suspended, so the daemon's event loop stays free, and the answer: pprof (raw or
 * gzip) or an SVG flamegraph, 204 when cancelled by DELETE. While it
 * records, the client's socket is watched: a requester that disconnects
 * ends the recording, so nobody keeps the sampler busy for nothing.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/render.h"
#include "http_internal.h"
#include "util/log.h"
#include "pipeline/session.h"

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

/* Called about every 250 ms by the session: is the requester still there? */
static void watch_client(const struct session_progress *p, void *ctx)
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

/* The answer as a sink: the profile rendered in the request's format. */
struct response_sink {
	struct sink base;
	enum render_format format;
	const char *group_by;
	bool idle;
	uint8_t *body;
	size_t len;
};

/* The answer's body: p rendered in the request's format. */
static int render_answer(struct response_sink *rs, const struct profile *p, const char *type)
{
	const struct ptype_info *t = ptype_of_record(type);
	char title[64];
	struct render_opts ro = { .title = title, .group_by = rs->group_by, .idle = rs->idle };

	snprintf(title, sizeof(title), "ebprof ad hoc profile: %s", t ? t->label : type);
	free(rs->body);
	rs->body = NULL;
	return render_profile(p, rs->format, &ro, &rs->body, &rs->len, rs->base.err,
			      sizeof(rs->base.err));
}

static int response_write(struct sink *k, const struct sink_profile *r)
{
	return render_answer((struct response_sink *)k, r->profile, r->type);
}

static void response_close(struct sink *k, double drain_s)
{
	(void)drain_s;
	free(((struct response_sink *)k)->body);
}

static const struct sink_ops response_ops = {
	.kind = "http",
	.write = response_write,
	.close = response_close,
};

static enum MHD_Result send_profile(struct http_server *s, struct http_req *rq,
				    struct MHD_Connection *c, const struct adhoc_request *r,
				    struct response_sink *rs)
{
	static const char *const raw_hdrs[] = { MHD_HTTP_HEADER_CONTENT_DISPOSITION,
						"attachment; filename=\"profile.pb\"", NULL };
	static const char *const gz_hdrs[] = { MHD_HTTP_HEADER_CONTENT_DISPOSITION,
					       "attachment; filename=\"profile.pb.gz\"", NULL };
	const char *const *hdrs = NULL;
	const char *ctype = "application/octet-stream";
	uint8_t *body = rs->body;

	if (!body) {
		log_error("http: %s: %s", r->what, rs->base.err);
		return http_send_msg(s, rq, c, 500, r->style, "%s", rs->base.err);
	}
	rs->body = NULL; /* MHD frees it */
	switch (rs->format) {
	case RENDER_PPROF:
		hdrs = raw_hdrs;
		break;
	case RENDER_PPROF_GZIP:
		hdrs = gz_hdrs;
		/* The compute API's archive is application/gzip; pprof
		 * endpoints answer application/octet-stream like Go's. */
		if (r->style == STYLE_STRING)
			ctype = "application/gzip";
		break;
	default:
		ctype = "image/svg+xml";
		break;
	}
	return http_send(s, rq, c, 200, ctype, body, rs->len, true, hdrs);
}

static void fill_opts(struct http_server *s, const struct adhoc_request *r,
		      const struct adhoc_targets *t, struct sink **sink, struct session_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->frequency = r->frequency;
	o->types = PTYPE_BIT(r->type);
	o->offcpu_pct = r->offcpu_pct > 0 ? (uint32_t)r->offcpu_pct : 100;
	o->offcpu_period_ns = SAMPLER_OFFCPU_PERIOD_US * 1000ull;
	o->faults_period = (uint32_t)r->faults_period;
	o->kernel = s->kernel;
	o->user = s->user;
	o->btf_path = s->btf;
	o->unwind = s->unwind;
	o->unwind_budget = s->unwind_budget;
	o->inherit = true;
	o->require_targets = true;
	o->split = SESSION_ONE_PROFILE;
	o->comment = r->what;
	o->query_labels = r->has_query_labels ? r->query_labels : s->query_labels;
	o->no_plpgsql = s->no_plpgsql;
	o->sinks = sink;
	o->nsinks = 1;
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

/* One recording: a session run for the request's seconds. */
static int record(struct http_server *s, const struct adhoc_request *r,
		  const struct adhoc_targets *t, struct response_sink *rs, struct watch *w,
		  struct session_stats *st, char *msg, size_t msglen)
{
	struct session_run_opts ro = { 0 };
	struct sink *sink = &rs->base;
	struct session_opts o;
	struct session *ses;
	int ret;

	fill_opts(s, r, t, &sink, &o);
	ret = session_open(&o, &ses, msg, msglen);
	if (ret)
		return ret;
	ro.duration_s = r->seconds;
	ro.stop = &s->adhoc.stop;
	ro.on_progress = watch_client;
	ro.ctx = w;
	ret = session_run(ses, &ro, NULL, msg, msglen);
	if (!ret)
		ret = session_finish(ses, &ro);
	session_get_stats(ses, st);
	session_close(ses);
	return ret;
}

/*
 * One recording from the agent's running session (pipeline/tap.c): its
 * samples of the request's targets and seconds, no program of its own.
 * Waits on the job's thread, watching the client and the slot's stop flag
 * (DELETE, a forced request, the server stopping) every 250 ms.
 */
static int record_tap(struct http_server *s, const struct adhoc_request *r,
		      const struct adhoc_targets *t, struct response_sink *rs, struct watch *w,
		      struct session_stats *st, char *msg, size_t msglen)
{
	struct session_tap_opts o = { .frequency = r->frequency,
				      .seconds = r->seconds,
				      .query_labels = r->has_query_labels ? r->query_labels
									  : s->query_labels,
				      .comment = r->what };
	struct session_tap_result res = { 0 };
	struct session_tap *tap;
	int ret, tries = 0;

	if (t->narrowed) {
		o.pids = t->pids;
		o.npids = t->npids;
	} else if ((ret = http_targets_any(s)) <= 0) {
		snprintf(msg, msglen, "%s",
			 ret ? "cannot find the target processes"
			     : "no target process: none of the agent's target processes runs");
		return ret ? ret : -ESRCH;
	}
	/* the one before (ended by force) may still be the session's for
	 * up to one turn of its loop */
	while ((ret = session_tap_open(s->session, &o, &tap)) == -EBUSY && tries++ < 40)
		usleep(50000);
	if (ret) {
		snprintf(msg, msglen, "%s",
			 ret == -ESHUTDOWN ? "the agent is shutting down"
					   : "cannot take the profile from the agent's sampling");
		return ret;
	}
	while ((ret = session_tap_wait(tap, 250, &res)) == -EAGAIN) {
		watch_client(NULL, w);
		if (atomic_load(&s->adhoc.stop))
			session_tap_end(tap);
	}
	session_tap_close(tap);
	if (ret) {
		snprintf(msg, msglen, "%s",
			 ret == -ESHUTDOWN   ? "the agent is shutting down"
			 : ret == -ECANCELED ? "the profile was ended before it began"
					     : strerror(-ret));
		return ret;
	}
	memset(st, 0, sizeof(*st));
	st->built.samples = res.samples;
	st->processes = res.processes;
	st->elapsed_s = res.seconds;
	if (render_answer(rs, res.profile, ptype_info(PTYPE_CPU)->name)) {
		free(rs->body); /* the error is in rs->base.err */
		rs->body = NULL;
	}
	profile_free(res.profile);
	log_debug("http: %s: taken from the agent's sampling at %d Hz", r->what, res.frequency);
	return 0;
}

/* The request on its job's thread, and what it needs. */
struct profile_job {
	struct adhoc_request r; /* moved from the caller */
	struct adhoc_targets t;
	bool claimed; /* the access handler took the slot */
};

static enum MHD_Result refused(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
			       const struct adhoc_request *r, int ret)
{
	if (ret == -ESHUTDOWN)
		return http_send_msg(s, rq, c, 503, r->style, "the agent is shutting down");
	if (ret != -EBUSY)
		return http_send_msg(s, rq, c, 503, r->style,
				     "too many profile requests at once, try again later");
	if (r->style == STYLE_STRING)
		return http_send_msg(s, rq, c, 409, r->style, "Profiling is already in progress.");
	return http_send_msg(s, rq, c, 409, r->style,
			     "Conflict: profiler already running (use ?force=true to cancel it)");
}

/* Record and answer: on the job's thread, the connection suspended. */
static void profile_job_run(struct http_job *j)
{
	struct profile_job *pj = j->arg;
	const struct adhoc_request *r = &pj->r;
	struct http_server *s = j->s;
	struct http_req *rq = j->rq;
	struct MHD_Connection *c = j->c;
	struct watch w = { .fd = rq->fd, .a = &s->adhoc };
	struct response_sink rs = { .base.ops = &response_ops,
				    .format = r->format,
				    .group_by = r->group_by,
				    .idle = r->idle };
	struct session_stats st = { 0 };
	char msg[HTTP_MSG_LEN];
	enum adhoc_end end;
	int ret, status;

	if (!pj->claimed) {
		/* A force request: waits here for the running one to end. */
		ret = adhoc_claim(&s->adhoc, true);
		if (ret) {
			refused(s, rq, c, r, ret);
			goto out;
		}
		rq->claimed = true;
	}
	log_info("http: %s: ad hoc profile at %d Hz for %d s%s", r->what, r->frequency, r->seconds,
		 pj->t.narrowed ? " of the selected processes" : "");
	if (session_tap_can(s->session, r->type,
			    r->has_query_labels ? r->query_labels : s->query_labels))
		ret = record_tap(s, r, &pj->t, &rs, &w, &st, msg, sizeof(msg));
	else
		ret = record(s, r, &pj->t, &rs, &w, &st, msg, sizeof(msg));
	end = adhoc_release(&s->adhoc);

	if (end == ADHOC_CLIENT_GONE) {
		log_info("http: %s: the client disconnected, profile dropped", r->what);
		rq->drop = true;
	} else if (end == ADHOC_CANCELLED) {
		log_info("http: %s: cancelled by DELETE /profile/cpu", r->what);
		/* HTTP sends no body with 204; the message is for the logs and
		 * for clients of the compute API that read it anyway. */
		http_send_msg(s, rq, c, 204, r->style,
			      "Profiling was cancelled from another request.");
	} else if (ret) {
		status = ret == -ESRCH ? 404 : ret == -ESHUTDOWN || ret == -ECANCELED ? 503 : 500;
		/* The session words it for the command line (-p, --comm). */
		if (ret == -ESRCH && !pj->t.narrowed)
			snprintf(msg, sizeof(msg),
				 "no target process: none of the agent's target processes runs");
		if (status == 500)
			log_error("http: %s: %s", r->what, msg);
		else
			log_info("http: %s: %s", r->what, msg);
		http_send_msg(s, rq, c, status, r->style, "%s", msg);
	} else {
		log_info("http: %s: %llu samples of %lu processes in %.1f s%s", r->what,
			 (unsigned long long)st.built.samples, st.processes, st.elapsed_s,
			 end_names[end]);
		send_profile(s, rq, c, r, &rs);
	}
	response_close(&rs.base, 0);
out:
	free(pj->t.pids);
	adhoc_request_free(&pj->r);
	free(pj);
	http_job_finish(j);
}

enum MHD_Result http_profile_serve(struct http_server *s, struct http_req *rq,
				   struct MHD_Connection *c, struct adhoc_request *r)
{
	const union MHD_ConnectionInfo *ci;
	struct profile_job *pj;
	char msg[HTTP_MSG_LEN];
	enum MHD_Result mr;
	int ret, status;

	pj = calloc(1, sizeof(*pj));
	if (!pj) {
		log_error("http: %s: out of memory", r->what);
		return MHD_NO;
	}
	pj->r = *r;
	memset(r, 0, sizeof(*r)); /* the lists are the job's now */
	r = &pj->r;
	status = http_targets_resolve(s, r, &pj->t, msg, sizeof(msg));
	if (status) {
		mr = http_send_msg(s, rq, c, status, r->style, "%s", msg);
		goto fail;
	}
	/* Busy is answered at once; a force request waits on its thread. */
	if (!r->force) {
		ret = adhoc_claim(&s->adhoc, false);
		if (ret) {
			mr = refused(s, rq, c, r, ret);
			goto fail;
		}
		pj->claimed = rq->claimed = true;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	rq->fd = ci ? ci->connect_fd : -1;
	ret = http_job_start(s, rq, c, profile_job_run, pj);
	if (!ret)
		return MHD_YES;
	if (pj->claimed)
		adhoc_release(&s->adhoc);
	if (ret != -ESHUTDOWN && ret != -EAGAIN)
		log_error("http: %s: cannot start a thread: %s", r->what, strerror(-ret));
	mr = refused(s, rq, c, r, ret == -ESHUTDOWN ? ret : -EAGAIN);
fail:
	free(pj->t.pids);
	adhoc_request_free(&pj->r);
	free(pj);
	return mr;
}
