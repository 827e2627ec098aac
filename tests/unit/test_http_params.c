// SPDX-License-Identifier: BSD-2-Clause
/*
 * Validation of ad hoc profile requests (http/params.c): the JSON body of
 * the compute API (POST /profile/cpu) and the query of the pprof-endpoint
 * API. Every field and parameter with good and bad values, the exact HTTP
 * status and the exact message.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http/http_internal.h"

/* ---- JSON body ------------------------------------------------------------ */

/* A request as the server makes it before validation: defaults that the
 * body must replace. */
static struct adhoc_request fresh(void)
{
	return (struct adhoc_request){
		.style = STYLE_MSG, .frequency = -1, .seconds = -1, .format = RENDER_SVG
	};
}

static int body(const char *json, struct adhoc_request *r, char *msg, size_t len)
{
	msg[0] = '\0';
	return http_params_json(json, strlen(json), r, msg, len);
}

/* The body must be refused with status and exactly want. */
static void json_refused(const char *json, int status, const char *want)
{
	struct adhoc_request r = fresh();
	char msg[HTTP_MSG_LEN];
	int ret = body(json, &r, msg, sizeof(msg));

	cr_expect_eq(ret, status, "%s: status %d, want %d (%s)", json, ret, status, msg);
	cr_expect_str_eq(msg, want, "%s:\n got  %s\n want %s", json, msg, want);
	cr_expect_eq(r.style, STYLE_STRING, "%s: error style", json);
}

#define BCC "\"profiler\": {\"BccProfile\": null}"
#define EXPECTED                                                                                   \
	"{\"BccProfile\": null}, {\"BccProfile\": \"PATH\"}, {\"Perf\": null} or {\"Perf\": "      \
	"\"PATH\"}"

Test(params_json, defaults_for_a_minimal_body)
{
	struct adhoc_request r = fresh();
	char msg[HTTP_MSG_LEN];

	cr_assert_eq(body("{" BCC "}", &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.style, STYLE_STRING);
	cr_expect_eq(r.frequency, 100);
	cr_expect_eq(r.seconds, 5);
	cr_expect_eq(r.format, RENDER_PPROF);
	cr_expect_str_eq(msg, "");
}

Test(params_json, every_field_set)
{
	struct adhoc_request r = fresh();
	char msg[HTTP_MSG_LEN];

	cr_assert_eq(
		body("{\"profiler\": {\"Perf\": \"/usr/bin/perf\"}, \"sampling_frequency\": 99,"
		     " \"timeout_seconds\": 60, \"archive\": true, \"unknown\": [1, 2]}",
		     &r, msg, sizeof(msg)),
		0, "%s", msg);
	cr_expect_eq(r.frequency, 99);
	cr_expect_eq(r.seconds, 60);
	cr_expect_eq(r.format, RENDER_PPROF_GZIP);
	r = fresh();
	cr_assert_eq(body("{" BCC ", \"archive\": false}", &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.format, RENDER_PPROF);
	r = fresh();
	cr_assert_eq(
		body("{\"profiler\": {\"BccProfile\": \"/opt/bcc\"}, \"sampling_frequency\": 1,"
		     " \"timeout_seconds\": 1}",
		     &r, msg, sizeof(msg)),
		0, "%s", msg);
	cr_expect_eq(r.frequency, 1);
	cr_expect_eq(r.seconds, 1);
	r = fresh();
	cr_assert_eq(body("{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 1000}", &r, msg,
			  sizeof(msg)),
		     0, "%s", msg);
	cr_expect_eq(r.frequency, 1000);
}

/* An absent number is the default, an explicit null is no number (the
 * platform's server answers 422); archive null is false. */
Test(params_json, null_for_a_number_is_422)
{
	struct adhoc_request r = fresh();
	char msg[HTTP_MSG_LEN];

	cr_assert_eq(body("{" BCC ", \"archive\": null}", &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.frequency, 100);
	cr_expect_eq(r.seconds, 5);
	cr_expect_eq(r.format, RENDER_PPROF);
	json_refused("{" BCC ", \"sampling_frequency\": null}", 422,
		     "sampling_frequency must be an integer between 1 and 1000, got null");
	json_refused("{" BCC ", \"timeout_seconds\": null}", 422,
		     "timeout_seconds must be an integer between 1 and 60, got null");
}

Test(params_json, sampling_frequency_range_and_type)
{
	json_refused("{" BCC ", \"sampling_frequency\": 0}", 422,
		     "sampling_frequency must be between 1 and 1000, got 0");
	json_refused("{" BCC ", \"sampling_frequency\": 1001}", 422,
		     "sampling_frequency must be between 1 and 1000, got 1001");
	json_refused("{" BCC ", \"sampling_frequency\": -5}", 422,
		     "sampling_frequency must be between 1 and 1000, got -5");
	json_refused("{" BCC ", \"sampling_frequency\": 99.5}", 422,
		     "sampling_frequency must be an integer between 1 and 1000, got 99.5");
	json_refused("{" BCC ", \"sampling_frequency\": 99.0}", 422,
		     "sampling_frequency must be an integer between 1 and 1000, got 99.0");
	json_refused("{" BCC ", \"sampling_frequency\": \"99\"}", 422,
		     "sampling_frequency must be an integer between 1 and 1000, got \"99\"");
	json_refused("{" BCC ", \"sampling_frequency\": true}", 422,
		     "sampling_frequency must be an integer between 1 and 1000, got true");
	json_refused("{" BCC ", \"sampling_frequency\": [99]}", 422,
		     "sampling_frequency must be an integer between 1 and 1000, got [99]");
}

Test(params_json, timeout_seconds_range_and_type)
{
	json_refused("{" BCC ", \"timeout_seconds\": 0}", 422,
		     "timeout_seconds must be between 1 and 60, got 0");
	json_refused("{" BCC ", \"timeout_seconds\": 61}", 422,
		     "timeout_seconds must be between 1 and 60, got 61");
	json_refused("{" BCC ", \"timeout_seconds\": 2.5}", 422,
		     "timeout_seconds must be an integer between 1 and 60, got 2.5");
	json_refused("{" BCC ", \"timeout_seconds\": {}}", 422,
		     "timeout_seconds must be an integer between 1 and 60, got {}");
	/* The first bad field is the one named. */
	json_refused("{" BCC ", \"timeout_seconds\": 0, \"sampling_frequency\": 0}", 422,
		     "sampling_frequency must be between 1 and 1000, got 0");
}

/* An integer too big for jansson is still named against its field. */
Test(params_json, integer_overflow_named_against_its_field)
{
	struct adhoc_request r = fresh();
	char msg[HTTP_MSG_LEN];

	json_refused("{" BCC ", \"sampling_frequency\": 100000000000000000000}", 422,
		     "sampling_frequency must be between 1 and 1000, got 1e+20");
	json_refused("{" BCC ", \"timeout_seconds\": -100000000000000000000}", 422,
		     "timeout_seconds must be between 1 and 60, got -1e+20");
	json_refused("{" BCC ", \"archive\": 100000000000000000000}", 422,
		     "archive must be a boolean, got 1e20");
	/* In a key nobody reads, it does not matter; the other integers are
	 * still integers. */
	cr_assert_eq(body("{" BCC ", \"sampling_frequency\": 49, \"other\": 100000000000000000000}",
			  &r, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_expect_eq(r.frequency, 49);
	cr_expect_eq(r.seconds, 5);
	/* A real too big for a double is a malformed body. */
	json_refused("{" BCC ", \"sampling_frequency\": 1e999}", 400,
		     "malformed JSON: real number overflow near '1e999' (line 1, column 62)");
}

Test(params_json, archive_must_be_a_boolean)
{
	json_refused("{" BCC ", \"archive\": \"yes\"}", 422,
		     "archive must be a boolean, got \"yes\"");
	json_refused("{" BCC ", \"archive\": 1}", 422, "archive must be a boolean, got 1");
	json_refused("{" BCC ", \"archive\": []}", 422, "archive must be a boolean, got []");
}

Test(params_json, profiler_is_required_and_checked)
{
	json_refused("{}", 422, "profiler is required: " EXPECTED);
	json_refused("{\"sampling_frequency\": 99}", 422, "profiler is required: " EXPECTED);
	/* Not the shape at all: 400, as the platform's server answers. */
	json_refused("{\"profiler\": null}", 400, "profiler must be " EXPECTED ", got null");
	json_refused("{\"profiler\": 7}", 400, "profiler must be " EXPECTED ", got 7");
	json_refused("{\"profiler\": \"BccProfile\"}", 400,
		     "profiler must be " EXPECTED ", got \"BccProfile\"");
	json_refused("{\"profiler\": []}", 400, "profiler must be " EXPECTED ", got []");
	json_refused("{\"profiler\": {}}", 400, "profiler must be " EXPECTED ", got {}");
	/* The shape with a wrong kind or value: 422. */
	json_refused("{\"profiler\": {\"Foo\": null}}", 422,
		     "profiler must be " EXPECTED ", got {\"Foo\":null}");
	json_refused("{\"profiler\": {\"Perf\": 5}}", 422,
		     "profiler must be " EXPECTED ", got {\"Perf\":5}");
	json_refused("{\"profiler\": {\"Perf\": null, \"BccProfile\": null}}", 422,
		     "profiler must be " EXPECTED ", got {\"Perf\":null,\"BccProfile\":null}");
	/* The profiler is checked before the other fields. */
	json_refused("{\"sampling_frequency\": 0, \"profiler\": 1}", 400,
		     "profiler must be " EXPECTED ", got 1");
}

Test(params_json, body_must_be_an_object)
{
	json_refused("[]", 422, "the request body must be a JSON object, got []");
	json_refused("\"x\"", 422, "the request body must be a JSON object, got \"x\"");
	json_refused("42", 422, "the request body must be a JSON object, got 42");
	json_refused("null", 422, "the request body must be a JSON object, got null");
}

Test(params_json, malformed_json_is_400_with_the_place)
{
	json_refused("", 400,
		     "malformed JSON: unexpected token near end of file (line 1, column 0)");
	json_refused("{", 400,
		     "malformed JSON: string or '}' expected near end of file (line 1, column 1)");
	json_refused("{" BCC ",\n \"archive\": tru}", 400,
		     "malformed JSON: invalid token near 'tru' (line 2, column 15)");
	json_refused("{" BCC "} x", 400,
		     "malformed JSON: end of file expected near 'x' (line 1, column 36)");
}

Test(params_json, a_key_given_twice_is_422)
{
	json_refused("{" BCC ", \"archive\": true, \"archive\": false}", 422,
		     "a key is given twice: duplicate object key near '\"archive\"'");
}

/* Long values are cut in messages; control bytes are escaped. */
Test(params_json, echoed_values_are_cut_and_printable)
{
	char json[512], want[256], a[101];

	memset(a, 'a', 100);
	a[100] = '\0';
	snprintf(json, sizeof(json), "{" BCC ", \"archive\": \"%s\"}", a);
	snprintf(want, sizeof(want), "archive must be a boolean, got \"%.60s...", a);
	json_refused(json, 422, want);
	json_refused("{" BCC ", \"archive\": \"\\u0001\"}", 422,
		     "archive must be a boolean, got \"\\u0001\"");
	json_refused("{\x01}", 400,
		     "malformed JSON: string or '}' expected near '\\x01' (line 1, column 2)");
}

Test(params_json, short_message_buffer_is_not_overrun)
{
	struct adhoc_request r = fresh();
	char msg[32];

	memset(msg, 'Z', sizeof(msg));
	cr_expect_eq(http_params_json("{}", 2, &r, msg, 16), 422);
	cr_expect_eq(msg[15], '\0');
	cr_expect_eq(strlen(msg), 15);
	cr_expect_eq(msg[16], 'Z');
}

/* ---- query ------------------------------------------------------------------ */

/* Defaults as profile_request.c sets them before the query. */
static struct adhoc_request defaults(void)
{
	return (struct adhoc_request){
		.style = STYLE_STRING, .frequency = 99, .seconds = 30, .format = RENDER_PPROF_GZIP
	};
}

static int query(const struct http_arg *a, size_t n, bool strict, struct adhoc_request *r,
		 char *msg, size_t len)
{
	msg[0] = '\0';
	return http_params_query(a, n, strict, r, msg, len);
}

#define Q(...) ((const struct http_arg[]){ __VA_ARGS__ })
#define NQ(...) (sizeof(Q(__VA_ARGS__)) / sizeof(struct http_arg))
/* The query must be refused (400) with exactly want. */
#define query_refused(want, ...)                                                                   \
	do {                                                                                       \
		struct adhoc_request r_ = defaults();                                              \
		char msg_[HTTP_MSG_LEN];                                                           \
		int ret_ = query(Q(__VA_ARGS__), NQ(__VA_ARGS__), true, &r_, msg_, sizeof(msg_));  \
                                                                                                   \
		cr_expect_eq(ret_, 400, "status %d (%s), want 400: %s", ret_, msg_, want);         \
		cr_expect_str_eq(msg_, want);                                                      \
		cr_expect_eq(r_.style, STYLE_MSG);                                                 \
		adhoc_request_free(&r_);                                                           \
	} while (0)

Test(params_query, no_parameters_keep_the_defaults)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN];

	cr_assert_eq(query(NULL, 0, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.style, STYLE_MSG);
	cr_expect_eq(r.frequency, 99);
	cr_expect_eq(r.seconds, 30);
	cr_expect_eq(r.format, RENDER_PPROF_GZIP);
	cr_expect_not(r.force);
	cr_expect_null(r.pids);
	cr_expect_null(r.comms);
}

Test(params_query, every_parameter_set)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN], self[16];
	const struct http_arg *a;

	snprintf(self, sizeof(self), "%d", (int)getpid());
	a = Q({ "seconds", "10" }, { "frequency", "1000" }, { "format", "svg" },
	      { "force", "true" }, { "pid", self }, { "comm", "postgres,pgbench" });
	cr_assert_eq(query(a, 6, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.seconds, 10);
	cr_expect_eq(r.frequency, 1000);
	cr_expect_eq(r.format, RENDER_SVG);
	cr_expect(r.force);
	cr_assert_eq(r.npids, 1);
	cr_expect_eq(r.pids[0], (uint32_t)getpid());
	cr_assert_eq(r.ncomms, 2);
	cr_expect_str_eq(r.comms[0], "postgres");
	cr_expect_str_eq(r.comms[1], "pgbench");
	adhoc_request_free(&r);
	cr_expect_null(r.pids);
	cr_expect_eq(r.npids, 0);
	cr_expect_null(r.comms);
	cr_expect_eq(r.ncomms, 0);

	r = defaults();
	a = Q({ "seconds", "1" }, { "frequency", "1" }, { "format", "pprof" });
	cr_assert_eq(query(a, 3, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.seconds, 1);
	cr_expect_eq(r.frequency, 1);
	cr_expect_eq(r.format, RENDER_PPROF_GZIP);
	r = defaults();
	r.format = RENDER_SVG;
	a = Q({ "seconds", "60" }, { "format", "pprof" });
	cr_assert_eq(query(a, 2, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.seconds, 60);
	cr_expect_eq(r.format, RENDER_PPROF_GZIP);
}

Test(params_query, seconds_and_frequency_are_plain_decimal_in_range)
{
	query_refused("seconds must be an integer between 1 and 60, got '0'", { "seconds", "0" });
	query_refused("seconds must be an integer between 1 and 60, got '61'", { "seconds", "61" });
	query_refused("seconds must be an integer between 1 and 60, got '-1'", { "seconds", "-1" });
	query_refused("seconds must be an integer between 1 and 60, got '+5'", { "seconds", "+5" });
	query_refused("seconds must be an integer between 1 and 60, got '5.0'",
		      { "seconds", "5.0" });
	query_refused("seconds must be an integer between 1 and 60, got '5s'", { "seconds", "5s" });
	query_refused("seconds must be an integer between 1 and 60, got ' 5'", { "seconds", " 5" });
	query_refused("seconds must be an integer between 1 and 60, got ''", { "seconds", "" });
	query_refused("seconds must be an integer between 1 and 60, got ''", { "seconds", NULL });
	query_refused("seconds must be an integer between 1 and 60, got '0000000005'",
		      { "seconds", "0000000005" });
	query_refused("frequency must be an integer between 1 and 1000, got '0'",
		      { "frequency", "0" });
	query_refused("frequency must be an integer between 1 and 1000, got '1001'",
		      { "frequency", "1001" });
	query_refused("frequency must be an integer between 1 and 1000, got 'abc'",
		      { "frequency", "abc" });
	query_refused("frequency must be an integer between 1 and 1000, got '99999999999'",
		      { "frequency", "99999999999" });
}

Test(params_query, leading_zeros_are_decimal)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN];

	cr_assert_eq(query(Q({ "seconds", "010" }), 1, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_eq(r.seconds, 10);
}

Test(params_query, format_pprof_or_svg)
{
	query_refused("format must be pprof or svg, got 'folded'", { "format", "folded" });
	query_refused("format must be pprof or svg, got 'SVG'", { "format", "SVG" });
	query_refused("format must be pprof or svg, got ''", { "format", "" });
	query_refused("format must be pprof or svg, got ''", { "format", NULL });
}

Test(params_query, force_values)
{
	static const struct {
		const char *v;
		bool want;
	} ok[] = {
		{ NULL, true }, { "true", true }, { "1", true }, { "false", false }, { "0", false }
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct adhoc_request r = defaults();
		char msg[HTTP_MSG_LEN];

		r.force = !ok[i].want;
		cr_assert_eq(query(Q({ "force", ok[i].v }), 1, true, &r, msg, sizeof(msg)), 0,
			     "force=%s: %s", ok[i].v ? ok[i].v : "(none)", msg);
		cr_expect_eq(r.force, ok[i].want, "force=%s", ok[i].v ? ok[i].v : "(none)");
	}
	query_refused("force must be true or false, got 'yes'", { "force", "yes" });
	query_refused("force must be true or false, got 'TRUE'", { "force", "TRUE" });
	query_refused("force must be true or false, got ''", { "force", "" });
}

static void *park(void *arg)
{
	int *tid = arg;

	__atomic_store_n(tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	pause();
	return NULL;
}

Test(params_query, pids_must_be_processes)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN], list[64], gone[16], want[160], tidbuf[16];
	pthread_t t;
	int tid = 0;
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (!child)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	snprintf(list, sizeof(list), "1,%d", (int)getpid());
	cr_assert_eq(query(Q({ "pid", list }), 1, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(r.npids, 2);
	cr_expect_eq(r.pids[0], 1);
	cr_expect_eq(r.pids[1], (uint32_t)getpid());
	adhoc_request_free(&r);

	/* A process that is gone (reaped just now). */
	snprintf(gone, sizeof(gone), "%d", (int)child);
	snprintf(want, sizeof(want), "pid %d: no such process", (int)child);
	query_refused(want, { "pid", gone });
	/* A thread of this process is not a process. */
	cr_assert_eq(pthread_create(&t, NULL, park, &tid), 0);
	while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST))
		usleep(1000);
	snprintf(tidbuf, sizeof(tidbuf), "%d", tid);
	snprintf(want, sizeof(want), "pid %d is a thread of process %d, not a process", tid,
		 (int)getpid());
	query_refused(want, { "pid", tidbuf });
	/* Syntax. */
	query_refused("pid must be a list of process ids, got 'abc'", { "pid", "abc" });
	query_refused("pid must be a list of process ids, got '1,,2'", { "pid", "1,,2" });
	query_refused("pid must be a list of process ids, got '0'", { "pid", "0" });
	query_refused("pid must be a list of process ids, got '-1'", { "pid", "-1" });
	query_refused("pid must be a list of process ids, got ''", { "pid", "" });
	query_refused("pid must be a list of process ids, got ''", { "pid", NULL });
}

Test(params_query, comm_names)
{
	query_refused("comm must be a list of process names (1 to 15 characters, no '/'), got "
		      "'a/b'",
		      { "comm", "a/b" });
	query_refused("comm must be a list of process names (1 to 15 characters, no '/'), got "
		      "'sixteen_chars_xx'",
		      { "comm", "sixteen_chars_xx" });
	query_refused("comm must be a list of process names (1 to 15 characters, no '/'), got "
		      "'postgres,'",
		      { "comm", "postgres," });
	query_refused("comm must be a list of process names (1 to 15 characters, no '/'), got ''",
		      { "comm", NULL });
}

Test(params_query, group_by_and_query_labels)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN];
	const struct http_arg ok[] = { { "format", "svg" },
				       { "group_by", "database" },
				       { "query_labels", "fingerprint" } };

	cr_assert_eq(query(ok, 3, true, &r, msg, sizeof(msg)), 0, "%s", msg);
	cr_expect_str_eq(r.group_by, "database");
	cr_expect(r.has_query_labels);
	cr_expect_eq(r.query_labels, QUERY_LABELS_FINGERPRINT);
	adhoc_request_free(&r);

	query_refused("group_by: cannot group by 'sql': use query, query_fingerprint, query_id, "
		      "pid, tid, thread_name, backend_type, database, user or comm",
		      { "format", "svg" }, { "group_by", "sql" });
	query_refused("group_by: needs a label (query, query_fingerprint, ...)",
		      { "format", "svg" }, { "group_by", NULL });
	query_refused("group_by needs format=svg", { "group_by", "query" });
	query_refused("query_labels must be normalized, fingerprint or off, got 'all'",
		      { "query_labels", "all" });
	query_refused("query_labels must be normalized, fingerprint or off, got ''",
		      { "query_labels", NULL });
}

/* idle= draws an off-CPU profile's idle time in the SVG (flamegraph.h). */
Test(params_query, idle_needs_svg)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN];

	cr_assert_eq(query(Q({ "format", "svg" }, { "idle", "1" }), 2, true, &r, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_expect(r.idle);
	r = defaults();
	cr_assert_eq(query(Q({ "format", "svg" }, { "idle", NULL }), 2, true, &r, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_expect(r.idle);
	r = defaults();
	cr_assert_eq(query(Q({ "format", "svg" }, { "idle", "0" }), 2, true, &r, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_expect_not(r.idle);
	query_refused("idle needs format=svg", { "idle", "1" });
	query_refused("idle must be 1 or 0 (true or false), got 'yes'", { "format", "svg" },
		      { "idle", "yes" });
}

Test(params_query, a_parameter_twice)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN];

	/* The same value twice counts once. */
	cr_assert_eq(
		query(Q({ "seconds", "7" }, { "seconds", "7" }), 2, true, &r, msg, sizeof(msg)), 0,
		"%s", msg);
	cr_expect_eq(r.seconds, 7);
	query_refused("parameter seconds is given more than once with different values",
		      { "seconds", "7" }, { "seconds", "8" });
	query_refused("parameter format is given more than once with different values",
		      { "format", "svg" }, { "frequency", "9" }, { "format", "pprof" });
	query_refused("parameter force is given more than once with different values",
		      { "force", NULL }, { "force", "true" });
	query_refused("parameter comm is given more than once with different values",
		      { "comm", "a" }, { "comm", "b" });
}

Test(params_query, unknown_parameters)
{
	struct adhoc_request r = defaults();
	char msg[HTTP_MSG_LEN];

	query_refused(
		"unknown parameter 'secs' (known: seconds, frequency, format, force, pid, comm, "
		"group_by, query_labels, ratio, faults_period, idle)",
		{ "seconds", "5" }, { "secs", "5" });
	query_refused("unknown parameter 'a\\x01b' (known: seconds, frequency, format, force, pid, "
		      "comm, group_by, query_labels, ratio, faults_period, idle)",
		      { "a\x01"
			"b",
			NULL });
	/* Not strict (Go's /debug/pprof/profile): ignored. */
	cr_assert_eq(query(Q({ "secs", "5" }, { "seconds", "6" }), 2, false, &r, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_expect_eq(r.seconds, 6);
}

Test(params_query, echoed_values_are_printable)
{
	query_refused("seconds must be an integer between 1 and 60, got '\\x01\\xff'",
		      { "seconds", "\x01\xff" });
	query_refused("format must be pprof or svg, got '<svg>\\x0a'", { "format", "<svg>\n" });
}

/* Parameters are checked in a fixed order: the first error is named. */
Test(params_query, the_first_error_is_named)
{
	query_refused("seconds must be an integer between 1 and 60, got '0'", { "format", "x" },
		      { "seconds", "0" });
	query_refused("format must be pprof or svg, got 'x'", { "force", "x" }, { "format", "x" });
}
