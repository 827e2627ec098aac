// SPDX-License-Identifier: BSD-2-Clause
/* A profile as a Pyroscope push request (remote_push.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "proto/push.pb-c.h"
#include "remote_push.h"
#include "remote_url.h"
#include "util/profile_types.h"

bool rhttp_push_wanted(const struct sink_profile *rec)
{
	const struct ptype_info *t = ptype_of_record(rec->type);

	return !t || t->pyroscope_push; /* a type of no entry: by its own name */
}

const char *rhttp_push_metric(const struct sink_profile *rec)
{
	const struct ptype_info *t = ptype_of_record(rec->type);

	return t ? t->pyroscope : rec->type;
}

char *rhttp_push_url(const char *base)
{
	char *url = NULL;

	return asprintf(&url, "%s%s", base, RHTTP_PUSH_PATH) < 0 ? NULL : url;
}

/* A version 4 UUID (random) as text, in out[37]. */
static void new_uuid(char out[37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), GRND_NONBLOCK) != (ssize_t)sizeof(b)) {
		/* no entropy yet: unique enough for an ID */
		struct timespec ts;
		uint64_t x;

		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
		memcpy(b, &x, sizeof(x));
		x ^= (uint64_t)getpid() << 32 | (uint64_t)(uintptr_t)out;
		memcpy(b + 8, &x, sizeof(x));
	}
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

int rhttp_push_body(const struct sink_profile *rec, uint8_t **out, size_t *len)
{
	size_t nl = 0, max = rec->nlabels + 2;
	Ebprof__Push__LabelPair *pairs = NULL, **pp = NULL;
	Ebprof__Push__RawProfileSeries series = EBPROF__PUSH__RAW_PROFILE_SERIES__INIT,
				       *sp = &series;
	Ebprof__Push__RawSample sample = EBPROF__PUSH__RAW_SAMPLE__INIT, *smp = &sample;
	Ebprof__Push__PushRequest req = EBPROF__PUSH__PUSH_REQUEST__INIT;
	char *app = NULL, id[37];
	int err = -ENOMEM;

	*out = NULL;
	*len = 0;
	if (!rec->data || !rec->len)
		return -EINVAL;
	pairs = calloc(max, sizeof(*pairs));
	pp = calloc(max, sizeof(*pp));
	app = rhttp_pyroscope_app(rec);
	if (!pairs || !pp || !app)
		goto out;
	for (size_t i = 0; i < max; i++) {
		ebprof__push__label_pair__init(&pairs[i]);
		pp[i] = &pairs[i];
	}
	pairs[nl].name = "__name__";
	pairs[nl++].value = (char *)rhttp_push_metric(rec);
	pairs[nl].name = "service_name";
	pairs[nl++].value = app;
	for (size_t i = 0; i < rec->nlabels; i++) {
		const char *k = rec->labels[i].key;

		if (!rhttp_pyroscope_label(k) || !strcmp(k, "service_name"))
			continue;
		if (!(pairs[nl].name = rhttp_pyroscope_key(k)))
			goto out;
		pairs[nl++].value = (char *)(rec->labels[i].value ? rec->labels[i].value : "");
	}
	new_uuid(id);
	sample.raw_profile.data = (uint8_t *)rec->data;
	sample.raw_profile.len = rec->len;
	sample.id = id;
	series.n_labels = nl;
	series.labels = pp;
	series.n_samples = 1;
	series.samples = &smp;
	req.n_series = 1;
	req.series = &sp;
	*len = ebprof__push__push_request__get_packed_size(&req);
	*out = malloc(*len ? *len : 1);
	if (*out) {
		ebprof__push__push_request__pack(&req, *out);
		err = 0;
	} else {
		*len = 0;
	}
out:
	for (size_t i = 2; pairs && i < nl; i++)
		free(pairs[i].name);
	free(pairs);
	free(pp);
	free(app);
	return err;
}
