/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the HTTP API (http.h), shared by its files:
 *   server.c        connections, request bodies, routing
 *   respond.c  responses: messages in either style, headers, counters
 *   params.c   validation of the JSON body and of the query
 *   adhoc_targets.c  the processes an ad hoc profile samples
 *   adhoc.c    the one-at-a-time ad hoc profile state machine
 *   profile_request.c  serving one ad hoc profile request end to end
 *   jobs.c     the threads that record ad hoc profiles off the event loop
 */
#ifndef EBPROF_HTTP_INTERNAL_H
#define EBPROF_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/render.h"
#include "http.h"
#include "util/netlisten.h"

#define HTTP_MAX_BODY (64 * 1024)
#define HTTP_MSG_LEN 512
/* Longest X-Request-Id echoed; a longer or unprintable one is replaced. */
#define HTTP_REQUEST_ID_MAX 128
/* Ad hoc profile requests waiting or recording at once (one records, the
 * others are force requests waiting for it to end); more: 503. */
#define HTTP_MAX_JOBS 8

/*
 * How a message is encoded: the compute API answers with a bare JSON
 * string ("..."), 4xx in plain text; the pprof-endpoint API with
 * {"msg":"..."}.
 */
enum http_style {
	STYLE_STRING,
	STYLE_MSG,
};

/* How a running ad hoc profile ended. */
enum adhoc_end {
	ADHOC_DONE = 0,	   /* ran its duration */
	ADHOC_CANCELLED,   /* DELETE: the requester gets 204 */
	ADHOC_FORCED,	   /* ?force=true from another request: 200, what it has */
	ADHOC_SHUTDOWN,	   /* http_stop(): 200, what it has */
	ADHOC_CLIENT_GONE, /* the requester disconnected: nobody to answer */
};

/* A validated ad hoc profile request. pids and comms are owned (free with
 * adhoc_request_free()); what names it for the logs. */
struct adhoc_request {
	enum http_style style;
	char what[48]; /* "POST /profile/cpu" */
	int frequency; /* Hz */
	int seconds;
	enum render_format format; /* RENDER_PPROF, RENDER_PPROF_GZIP or RENDER_SVG */
	bool force;
	uint32_t *pids; /* pid= selector, NULL if absent */
	size_t npids;
	char **comms; /* comm= selector, NULL if absent */
	size_t ncomms;
	char *group_by; /* group_by= label key, NULL if absent */
	bool has_query_labels;
	enum query_labels query_labels; /* query_labels=, if has_query_labels */
	enum ptype type;		/* /profile/TYPE: the profile type */
	int offcpu_pct;			/* offcpu: percent of switches taken, 0: 100 */
	int faults_period;		/* faults: a sample every N faults, 0: default */
	bool idle;			/* idle= (format=svg): draw off-CPU idle time */
};

void adhoc_request_free(struct adhoc_request *r);

/* The single ad hoc slot. All fields under mu; stop is also read by the
 * recording without the lock. */
struct adhoc_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool running;	    /* a request holds the slot (recording or building) */
	bool stopping;	    /* http_stop() began: no new profiles */
	unsigned forcers;   /* force requests waiting for the slot */
	unsigned active;    /* requests that held the slot and are not answered yet */
	enum adhoc_end end; /* why the running one ends, ADHOC_DONE if not asked to */
	atomic_int stop;    /* the running recording's stop flag */
};

/* Status counters, indexed by HTTP status 0..599. */
struct http_counters {
	atomic_uint_fast64_t all[600];
	atomic_uint_fast64_t adhoc[600];
};

/* A thread that serves an ad hoc profile request while its connection is
 * suspended (jobs.c). */
enum job_state {
	JOB_FREE,
	JOB_RUNNING,
	JOB_DONE, /* the thread has ended: join it */
};

struct http_job {
	enum job_state state;
	pthread_t thread;
	bool go; /* the connection is suspended: the thread may start */
	struct http_server *s;
	struct http_req *rq;
	struct MHD_Connection *c;
	void (*run)(struct http_job *j);
	void *arg; /* run's, freed by run */
};

/* The server; the option arrays are copies it owns. */
struct http_server {
	struct MHD_Daemon *daemon;
	int listen_fd; /* closed by MHD_stop_daemon() once the daemon runs */
	int port;
	char listen[128];
	char **comms;
	size_t ncomms;
	uint32_t *pids;
	size_t npids;
	char **cgroups;
	size_t ncgroups;
	bool kernel, user;
	char *btf; /* NULL: the kernel's */
	enum sampler_unwind unwind;
	uint64_t unwind_budget;
	enum query_labels query_labels;
	struct session *session; /* the agent's, NULL: none (borrowed) */
	bool no_plpgsql;
	int (*metrics)(FILE *out, void *ctx);
	void *metrics_ctx;
	struct adhoc_state adhoc;
	struct http_counters counters;
	pthread_mutex_t jobs_mu;
	pthread_cond_t jobs_cv;
	bool jobs_stopping; /* http_stop() began: no new jobs */
	struct http_job jobs[HTTP_MAX_JOBS];
};

/* One request's state (MHD's per-request context); freed when MHD reports
 * the request complete. */
struct http_req {
	char *body; /* malloc'ed, NUL-terminated, at most HTTP_MAX_BODY bytes */
	size_t len;
	size_t discarded; /* bytes dropped beyond the limit */
	bool too_big;
	bool adhoc;   /* an ad hoc profile route: counted separately */
	bool claimed; /* held the ad hoc slot: release "active" when complete */
	bool queued;  /* a response is queued */
	/* Served by a job (jobs.c): the connection is suspended, http_send()
	 * keeps the response in pending until the job resumes it. */
	bool deferred;
	bool job_done; /* the job ended and resumed the connection */
	bool drop;     /* ... with nobody to answer: close the connection */
	struct MHD_Response *pending;
	unsigned pending_status;
	int fd;					  /* the client's socket, -1 if unknown */
	char request_id[HTTP_REQUEST_ID_MAX + 1]; /* X-Request-Id of the answer */
};

/* A query parameter as MHD decoded it; value NULL for "?key" without '='. */
struct http_arg {
	const char *key;
	const char *value;
};

/* --- respond.c --- */

/*
 * Queue a response with status, content type and body (len bytes, copied
 * unless must_free: then buf is malloc'ed and owned by MHD from here on,
 * freed even on failure). headers: NULL or name, value, ..., NULL.
 * Counts the status. Returns MHD's result.
 */
enum MHD_Result http_send(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
			  unsigned status, const char *ctype, void *buf, size_t len, bool must_free,
			  const char *const *headers);
/* rq's X-Request-Id: the client's when it sent a usable one (1 to
 * HTTP_REQUEST_ID_MAX visible ASCII characters), else 32 random hex digits. */
void http_request_id(struct http_req *rq, struct MHD_Connection *c);
/* Queue the response a job left in rq (deferred): MHD's result. */
enum MHD_Result http_send_pending(struct http_server *s, struct http_req *rq,
				  struct MHD_Connection *c);
/* A message in the given style, application/json, with extra headers
 * (name, value, ..., NULL; or NULL). */
enum MHD_Result http_send_msg_h(struct http_server *s, struct http_req *rq,
				struct MHD_Connection *c, unsigned status, enum http_style style,
				const char *const *headers, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
/* The same without extra headers. */
#define http_send_msg(s, rq, c, status, style, ...)                                                \
	http_send_msg_h(s, rq, c, status, style, NULL, __VA_ARGS__)
/* Copy s into buf as printable ASCII: other bytes become \xNN. For
 * echoing client input in messages and logs. Returns buf. */
char *http_printable(const char *s, size_t slen, char *buf, size_t buflen);
/* A path of the API and what it takes (routes.c). */
struct http_route;
/* The route of url, or NULL (404). */
const struct http_route *http_find_route(const char *url);
/* How rt's errors are written (rt NULL: as the pprof-endpoint API's). */
enum http_style http_route_style(const struct http_route *rt);
/* Is a request of rt an ad hoc profile (counted as one)? */
bool http_route_adhoc(const struct http_route *rt);
/* Answer a request whose body is read: 404, 405, or rt's handler. */
enum MHD_Result http_dispatch(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
			      const struct http_route *rt, const char *url, const char *method);

/* Render /metrics (ours after the agent's). 0 or a negative errno; *out
 * malloc'ed. */
int http_metrics_text(struct http_server *s, char **out, size_t *len);

/* --- params.c --- */

/*
 * POST /profile/cpu body -> r (style STYLE_STRING, format RENDER_PPROF or,
 * with archive, RENDER_PPROF_GZIP). 0, or the HTTP status to answer (400
 * malformed JSON, 422 bad field) with the message in msg.
 */
int http_params_json(const char *body, size_t len, struct adhoc_request *r, char *msg,
		     size_t msglen);
/*
 * Query parameters -> r, which holds the defaults on entry. strict: an
 * unknown parameter is an error. 0, or 400 with the message in msg. pid=
 * must name existing processes. On error r may own partial lists.
 */
int http_params_query(const struct http_arg *args, size_t n, bool strict, struct adhoc_request *r,
		      char *msg, size_t msglen);

/* --- adhoc_targets.c --- */

/* What the recording of an ad hoc profile samples. */
struct adhoc_targets {
	bool narrowed;	/* pid=/comm= given: exactly pids */
	uint32_t *pids; /* malloc'ed when narrowed */
	size_t npids;
};

/*
 * Resolve the request's selectors against the agent's target set. Without
 * pid=/comm= the agent's rules are used as they are. 0, or the HTTP status
 * to answer (400: a pid outside the agent's targets, 404: nothing matches,
 * 500) with the message in msg. Free t->pids.
 */
int http_targets_resolve(const struct http_server *s, const struct adhoc_request *r,
			 struct adhoc_targets *t, char *msg, size_t msglen);
/* Does a process of the agent's target set run now? 1, 0, or a negative
 * errno when /proc cannot be read. */
int http_targets_any(const struct http_server *s);

/* --- adhoc.c --- */

int adhoc_init(struct adhoc_state *a);
void adhoc_destroy(struct adhoc_state *a);
/*
 * Take the slot for a new profile (resets stop and end). Busy and not
 * force: -EBUSY. With force, the running profile is asked to end
 * (ADHOC_FORCED) and this waits until it did. -ESHUTDOWN once stopping.
 * On 0, adhoc_release() then adhoc_answered() must follow.
 */
int adhoc_claim(struct adhoc_state *a, bool force);
/* The recording is over: free the slot. Returns how it ended. */
enum adhoc_end adhoc_release(struct adhoc_state *a);
/* The response of a request that held the slot went out (or failed). */
void adhoc_answered(struct adhoc_state *a);
/* Ask the running profile to end for why (the first reason wins).
 * 0, or -ENOENT when nothing runs. */
int adhoc_cancel(struct adhoc_state *a, enum adhoc_end why);
bool adhoc_running(struct adhoc_state *a);
/* Refuse new profiles, end the running one (ADHOC_SHUTDOWN) and wait up
 * to timeout_s for its answer to go out. */
void adhoc_shutdown(struct adhoc_state *a, double timeout_s);

/* --- profile_request.c --- */

/*
 * Serve one validated ad hoc profile request: targets, the slot (409 at
 * once when busy), then the recording and the answer on a job's thread
 * while the connection is suspended. Takes r's lists (r is left empty).
 * Called from the access handler.
 */
enum MHD_Result http_profile_serve(struct http_server *s, struct http_req *rq,
				   struct MHD_Connection *c, struct adhoc_request *r);

/* --- jobs.c --- */

int http_jobs_init(struct http_server *s);
/*
 * Run run(job) on a thread of its own with c suspended: the job answers
 * through http_send() (kept in rq until it resumes c, the access handler
 * then queues it). From the access handler only. 0, -EAGAIN when
 * HTTP_MAX_JOBS run, -ESHUTDOWN once stopping, or pthread_create's error:
 * then nothing was suspended and arg is still the caller's.
 */
int http_job_start(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
		   void (*run)(struct http_job *j), void *arg);
/* The job's end: resume its connection (rq->drop: close it unanswered). */
void http_job_finish(struct http_job *j);
/* Refuse new jobs and join every thread (their work must be ending). */
void http_jobs_stop(struct http_server *s);
void http_jobs_destroy(struct http_server *s);

#endif /* EBPROF_HTTP_INTERNAL_H */
