// SPDX-License-Identifier: BSD-2-Clause
/*
 * Validation of ad hoc profile requests: the JSON body of the compute API
 * (POST /profile/cpu) and the query of the pprof-endpoint API.
 *
 * JSON: unknown keys are ignored, null means "the default", a key given
 * twice is 422 (JSON_REJECT_DUPLICATES). Integers must be JSON integers:
 * 99.5 and 99.0 are both rejected (422), as serde does for an integer
 * field. A number past what jansson reads as an integer (1e20) is a real
 * for it, so an integer field holding one is 422 against that field; only
 * a number past a double (1e999) is malformed JSON, 400.
 *
 * Query: seconds, frequency, format, force, pid, comm, group_by,
 * query_labels, idle (format=svg: an off-CPU profile's idle time is drawn
 * too; flamegraph.h). A parameter given
 * twice with the same value counts once, with different values it is 400.
 * Values are decimal integers without sign or fraction.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/args.h"
#include "http_internal.h"
#include "util/log.h"

void adhoc_request_free(struct adhoc_request *r)
{
	free(r->pids);
	r->pids = NULL;
	r->npids = 0;
	args_free_list(r->comms, r->ncomms);
	r->comms = NULL;
	r->ncomms = 0;
	free(r->group_by);
	r->group_by = NULL;
}

/* ---- JSON body ---- */

/* A JSON value for a message, cut to a readable length. */
static void dump_value(const json_t *v, char *buf, size_t len)
{
	char *d = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!d) {
		snprintf(buf, len, "?");
		return;
	}
	if (strlen(d) > 64)
		snprintf(buf, len, "%.61s...", d);
	else
		snprintf(buf, len, "%s", d);
	free(d);
}

/*
 * An integer field. as_real: the body was re-read with every integer as a
 * real (after a numeric overflow), so integral reals count as integers.
 * 0 or 422.
 */
static int json_int_field(const json_t *root, const char *key, long min, long max, long def,
			  bool as_real, int *out, char *msg, size_t msglen)
{
	const json_t *v = json_object_get(root, key);
	char got[80];

	if (!v) {
		*out = (int)def;
		return 0;
	}
	/* An explicit null is no integer (422), as the platform's server says. */
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x < min || x > max) {
			snprintf(msg, msglen, "%s must be between %ld and %ld, got %lld", key, min,
				 max, (long long)x);
			return 422;
		}
		*out = (int)x;
		return 0;
	}
	if (as_real && json_is_real(v)) {
		double x = json_real_value(v);

		if (x == floor(x) && (x < min || x > max)) {
			snprintf(msg, msglen, "%s must be between %ld and %ld, got %.17g", key, min,
				 max, x);
			return 422;
		}
		if (x == floor(x)) {
			*out = (int)x;
			return 0;
		}
	}
	dump_value(v, got, sizeof(got));
	snprintf(msg, msglen, "%s must be an integer between %ld and %ld, got %s", key, min, max,
		 got);
	return 422;
}

static int json_profiler(const json_t *root, char *msg, size_t msglen)
{
	static const char expected[] = "{\"BccProfile\": null}, {\"BccProfile\": \"PATH\"}, "
				       "{\"Perf\": null} or {\"Perf\": \"PATH\"}";
	const json_t *p = json_object_get(root, "profiler"), *v;
	const char *kind;
	char got[80];

	if (!p) {
		snprintf(msg, msglen, "profiler is required: %s", expected);
		return 422;
	}
	/* Not even the shape (null, a number, {}): 400, as the platform's
	 * server answers; the right shape with a wrong kind or value: 422. */
	if (!json_is_object(p) || !json_object_size(p)) {
		dump_value(p, got, sizeof(got));
		snprintf(msg, msglen, "profiler must be %s, got %s", expected, got);
		return 400;
	}
	if (json_object_size(p) != 1)
		goto bad;
	kind = json_object_iter_key(json_object_iter((json_t *)p));
	v = json_object_get(p, kind);
	if ((strcmp(kind, "BccProfile") && strcmp(kind, "Perf")) ||
	    (!json_is_null(v) && !json_is_string(v)))
		goto bad;
	if (json_is_string(v)) {
		char path[256];

		http_printable(json_string_value(v), json_string_length(v), path, sizeof(path));
		log_info("http: profiler %s '%s' requested: the built-in eBPF sampler serves it, "
			 "the path is ignored",
			 kind, path);
	}
	return 0;
bad:
	dump_value(p, got, sizeof(got));
	snprintf(msg, msglen, "profiler must be %s, got %s", expected, got);
	return 422;
}

static int json_fields(const json_t *root, bool as_real, struct adhoc_request *r, char *msg,
		       size_t msglen)
{
	const json_t *archive;
	char got[80];
	int ret;

	if (!json_is_object(root)) {
		dump_value(root, got, sizeof(got));
		snprintf(msg, msglen, "the request body must be a JSON object, got %s", got);
		return 422;
	}
	ret = json_profiler(root, msg, msglen);
	if (!ret)
		ret = json_int_field(root, "sampling_frequency", 1, 1000, 100, as_real,
				     &r->frequency, msg, msglen);
	if (!ret && r->type == PTYPE_OFFCPU)
		ret = json_int_field(root, "offcpu_ratio", 1, 100, 100, as_real, &r->offcpu_pct,
				     msg, msglen);
	if (!ret && r->type == PTYPE_FAULTS)
		ret = json_int_field(root, "faults_period", 1, SAMPLER_FAULTS_PERIOD_MAX,
				     SAMPLER_FAULTS_PERIOD, as_real, &r->faults_period, msg,
				     msglen);
	if (!ret)
		ret = json_int_field(root, "timeout_seconds", 1, 60, 5, as_real, &r->seconds, msg,
				     msglen);
	if (ret)
		return ret;
	archive = json_object_get(root, "archive");
	if (archive && !json_is_null(archive) && !json_is_boolean(archive)) {
		dump_value(archive, got, sizeof(got));
		snprintf(msg, msglen, "archive must be a boolean, got %s", got);
		return 422;
	}
	r->format = json_is_true(archive) ? RENDER_PPROF_GZIP : RENDER_PPROF;
	return 0;
}

int http_params_json(const char *body, size_t len, struct adhoc_request *r, char *msg,
		     size_t msglen)
{
	const size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES;
	json_error_t jerr;
	json_t *root;
	int ret;

	r->style = STYLE_STRING;
	root = json_loadb(body, len, flags, &jerr);
	if (!root && json_error_code(&jerr) == json_error_numeric_overflow) {
		/* Name the field: re-read with integers as reals. */
		root = json_loadb(body, len, flags | JSON_DECODE_INT_AS_REAL, &jerr);
		if (root) {
			ret = json_fields(root, true, r, msg, msglen);
			json_decref(root);
			return ret;
		}
	}
	if (!root) {
		char text[JSON_ERROR_TEXT_LENGTH * 4];

		http_printable(jerr.text, strlen(jerr.text), text, sizeof(text));
		if (json_error_code(&jerr) == json_error_duplicate_key) {
			snprintf(msg, msglen, "a key is given twice: %s", text);
			return 422;
		}
		snprintf(msg, msglen, "malformed JSON: %s (line %d, column %d)", text, jerr.line,
			 jerr.column);
		return 400;
	}
	ret = json_fields(root, false, r, msg, msglen);
	json_decref(root);
	return ret;
}

/* ---- query ---- */

static const char *const known[] = { "seconds", "frequency",	 "format",   "force",
				     "pid",	"comm",		 "group_by", "query_labels",
				     "ratio",	"faults_period", "idle" };

/* The value of key: NULL and *given false if absent; 400 when it is given
 * twice with different values. */
static int query_value(const struct http_arg *args, size_t n, const char *key, bool *given,
		       const char **value, char *msg, size_t msglen)
{
	*given = false;
	*value = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *v = args[i].value;

		if (strcmp(args[i].key, key))
			continue;
		if (*given && (!v != !*value || (v && strcmp(v, *value)))) {
			snprintf(msg, msglen,
				 "parameter %s is given more than once with different values", key);
			return 400;
		}
		*given = true;
		*value = v;
	}
	return 0;
}

static int query_int(const char *key, const char *v, long min, long max, int *out, char *msg,
		     size_t msglen)
{
	char shown[80];
	char *end;
	long x;

	if (v && *v >= '0' && *v <= '9' && strlen(v) <= 9) {
		x = strtol(v, &end, 10);
		if (!*end && x >= min && x <= max) {
			*out = (int)x;
			return 0;
		}
	}
	snprintf(msg, msglen, "%s must be an integer between %ld and %ld, got '%s'", key, min, max,
		 v ? http_printable(v, strlen(v), shown, sizeof(shown)) : "");
	return 400;
}

/* Each pid names a process (not a thread of one). */
static int query_pids_exist(const uint32_t *pids, size_t n, char *msg, size_t msglen)
{
	for (size_t i = 0; i < n; i++) {
		char path[64], line[128];
		unsigned long tgid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%u/status", pids[i]);
		f = fopen(path, "re");
		if (!f) {
			snprintf(msg, msglen, "pid %u: no such process", pids[i]);
			return 400;
		}
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Tgid: %lu", &tgid) == 1)
				break;
		fclose(f);
		if (tgid && tgid != pids[i]) {
			snprintf(msg, msglen, "pid %u is a thread of process %lu, not a process",
				 pids[i], tgid);
			return 400;
		}
	}
	return 0;
}

static int query_known(const char *key)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(key, known[i]))
			return 1;
	return 0;
}

/* idle=: 1/true or 0/false, only with format=svg. */
static int query_idle(const struct http_arg *args, size_t n, struct adhoc_request *r, char *msg,
		      size_t msglen)
{
	char shown[80];
	const char *v;
	bool given;
	int ret = query_value(args, n, "idle", &given, &v, msg, msglen);

	if (ret || !given)
		return ret;
	/* "?idle" alone means true, as a flag would. */
	if (!v || !strcmp(v, "true") || !strcmp(v, "1")) {
		r->idle = true;
	} else if (!strcmp(v, "false") || !strcmp(v, "0")) {
		r->idle = false;
	} else {
		snprintf(msg, msglen, "idle must be 1 or 0 (true or false), got '%s'",
			 http_printable(v, strlen(v), shown, sizeof(shown)));
		return 400;
	}
	if (r->format != RENDER_SVG) {
		snprintf(msg, msglen, "idle needs format=svg");
		return 400;
	}
	return 0;
}

/* group_by= and query_labels=. */
static int query_grouping(const struct http_arg *args, size_t n, struct adhoc_request *r, char *msg,
			  size_t msglen)
{
	char shown[80], err[200];
	const char *v;
	bool given;
	int ret = query_value(args, n, "group_by", &given, &v, msg, msglen);

	if (ret)
		return ret;
	if (given) {
		const char *key = v ? render_group_by_key(v, err, sizeof(err)) : NULL;

		if (!key) {
			snprintf(msg, msglen, "group_by: %s",
				 v ? err : "needs a label (query, query_fingerprint, ...)");
			return 400;
		}
		v = key;
		if (r->format != RENDER_SVG) {
			snprintf(msg, msglen, "group_by needs format=svg");
			return 400;
		}
		r->group_by = strdup(v);
		if (!r->group_by) {
			snprintf(msg, msglen, "out of memory");
			return 503;
		}
	}
	ret = query_value(args, n, "query_labels", &given, &v, msg, msglen);
	if (ret || !given)
		return ret;
	if (!v || query_labels_parse(v, &r->query_labels)) {
		snprintf(msg, msglen,
			 "query_labels must be normalized, fingerprint or off, got '%s'",
			 v ? http_printable(v, strlen(v), shown, sizeof(shown)) : "");
		return 400;
	}
	r->has_query_labels = true;
	return 0;
}

int http_params_query(const struct http_arg *args, size_t n, bool strict, struct adhoc_request *r,
		      char *msg, size_t msglen)
{
	char shown[80], err[256];
	const char *v;
	bool given;
	int ret;

	r->style = STYLE_MSG;
	for (size_t i = 0; strict && i < n; i++) {
		if (!query_known(args[i].key)) {
			snprintf(
				msg, msglen,
				"unknown parameter '%s' (known: seconds, frequency, format, force, "
				"pid, comm, group_by, query_labels, ratio, faults_period, idle)",
				http_printable(args[i].key, strlen(args[i].key), shown,
					       sizeof(shown)));
			return 400;
		}
	}
	ret = query_value(args, n, "seconds", &given, &v, msg, msglen);
	if (!ret && given)
		ret = query_int("seconds", v, 1, 60, &r->seconds, msg, msglen);
	if (!ret)
		ret = query_value(args, n, "frequency", &given, &v, msg, msglen);
	if (!ret && given)
		ret = query_int("frequency", v, 1, 1000, &r->frequency, msg, msglen);
	if (!ret)
		ret = query_value(args, n, "ratio", &given, &v, msg, msglen);
	if (!ret && given && r->type != PTYPE_OFFCPU) {
		snprintf(msg, msglen, "ratio is a parameter of /profile/offcpu");
		return 400;
	}
	if (!ret && given)
		ret = query_int("ratio", v, 1, 100, &r->offcpu_pct, msg, msglen);
	if (!ret)
		ret = query_value(args, n, "faults_period", &given, &v, msg, msglen);
	if (!ret && given && r->type != PTYPE_FAULTS) {
		snprintf(msg, msglen, "faults_period is a parameter of /profile/faults");
		return 400;
	}
	if (!ret && given)
		ret = query_int("faults_period", v, 1, SAMPLER_FAULTS_PERIOD_MAX, &r->faults_period,
				msg, msglen);
	if (!ret)
		ret = query_value(args, n, "format", &given, &v, msg, msglen);
	if (ret)
		return ret;
	if (given) {
		if (v && !strcmp(v, "pprof")) {
			r->format = RENDER_PPROF_GZIP;
		} else if (v && !strcmp(v, "svg")) {
			r->format = RENDER_SVG;
		} else {
			snprintf(msg, msglen, "format must be pprof or svg, got '%s'",
				 v ? http_printable(v, strlen(v), shown, sizeof(shown)) : "");
			return 400;
		}
	}
	ret = query_value(args, n, "force", &given, &v, msg, msglen);
	if (ret)
		return ret;
	if (given) {
		/* "?force" alone means true, as a flag would. */
		if (!v || !strcmp(v, "true") || !strcmp(v, "1")) {
			r->force = true;
		} else if (!strcmp(v, "false") || !strcmp(v, "0")) {
			r->force = false;
		} else {
			snprintf(msg, msglen, "force must be true or false, got '%s'",
				 http_printable(v, strlen(v), shown, sizeof(shown)));
			return 400;
		}
	}
	ret = query_value(args, n, "pid", &given, &v, msg, msglen);
	if (ret)
		return ret;
	if (given) {
		if (!v || args_parse_pids(v, &r->pids, &r->npids, err, sizeof(err))) {
			snprintf(msg, msglen, "pid must be a list of process ids, got '%s'",
				 v ? http_printable(v, strlen(v), shown, sizeof(shown)) : "");
			return 400;
		}
		ret = query_pids_exist(r->pids, r->npids, msg, msglen);
		if (ret)
			return ret;
	}
	ret = query_value(args, n, "comm", &given, &v, msg, msglen);
	if (ret)
		return ret;
	if (given && (!v || args_parse_names(v, &r->comms, &r->ncomms, err, sizeof(err)))) {
		snprintf(msg, msglen,
			 "comm must be a list of process names (1 to 15 characters, no '/'), "
			 "got '%s'",
			 v ? http_printable(v, strlen(v), shown, sizeof(shown)) : "");
		return 400;
	}
	ret = query_grouping(args, n, r, msg, msglen);
	return ret ? ret : query_idle(args, n, r, msg, msglen);
}
