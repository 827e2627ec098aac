// SPDX-License-Identifier: BSD-2-Clause
/*
 * A profile as a Pyroscope push request (remote_push.h): read back with
 * the protobuf-c decoder of proto/push.proto, one series whose labels are
 * __name__, service_name and the profile's own labels as /ingest would
 * send them, one sample holding the profile's bytes as they are, with a
 * fresh version 4 UUID.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "proto/push.pb-c.h"
#include "sinks/remote/remote_push.h"

TestSuite(remote_push);

static const char *label(const Ebprof__Push__RawProfileSeries *s, const char *name)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i]->name, name))
			return s->labels[i]->value;
	return NULL;
}

static Ebprof__Push__PushRequest *pushed(const struct sink_profile *rec)
{
	Ebprof__Push__PushRequest *req;
	uint8_t *body;
	size_t len;

	cr_assert_eq(rhttp_push_body(rec, &body, &len), 0);
	req = ebprof__push__push_request__unpack(NULL, len, body);
	free(body);
	cr_assert_not_null(req, "not a PushRequest");
	cr_assert_eq(req->n_series, 1);
	cr_assert_eq(req->series[0]->n_samples, 1);
	return req;
}

Test(remote_push, offcpu_profile_as_one_series)
{
	static const uint8_t pprof[] = { 0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02, 0x03 };
	const struct kv labels[] = {
		{ "service", "db host" }, { "__name__", "cpu" }, { "wait_event", "ClientRead" },
		{ "1st", "x" },		  { "a.b", "é, {x}" },	 { "", "no key" }
	};
	const struct sink_profile rec = { .type = "offcpu",
					  .service = "db host",
					  .labels = labels,
					  .nlabels = sizeof(labels) / sizeof(labels[0]),
					  .data = pprof,
					  .len = sizeof(pprof) };
	Ebprof__Push__PushRequest *req = pushed(&rec);
	const Ebprof__Push__RawProfileSeries *s = req->series[0];
	const Ebprof__Push__RawSample *smp = s->samples[0];
	regex_t uuid;

	cr_expect(rhttp_push_wanted(&rec));
	cr_expect_str_eq(label(s, "__name__"), "offcpu");
	cr_expect_str_eq(label(s, "service_name"), "db_host");
	cr_expect_str_eq(label(s, "wait_event"), "ClientRead");
	cr_expect_str_eq(label(s, "_1st"), "x");
	/* values as they are: the push API has no name syntax to protect */
	cr_expect_str_eq(label(s, "a_b"), "é, {x}");
	cr_expect_null(label(s, "service"));
	cr_expect_eq(s->n_labels, 5, "__name__ once, service and the empty key left out");
	cr_assert_eq(smp->raw_profile.len, sizeof(pprof));
	cr_expect_eq(memcmp(smp->raw_profile.data, pprof, sizeof(pprof)), 0);
	cr_assert_eq(
		regcomp(&uuid,
			"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
			REG_EXTENDED | REG_NOSUB),
		0);
	cr_expect_eq(regexec(&uuid, smp->id, 0, NULL, 0), 0, "ID %s", smp->id);
	regfree(&uuid);
	ebprof__push__push_request__free_unpacked(req, NULL);
}

Test(remote_push, each_push_has_its_own_id)
{
	static const uint8_t pprof[] = { 1, 2, 3 };
	const struct sink_profile rec = { .type = "offcpu", .data = pprof, .len = sizeof(pprof) };
	Ebprof__Push__PushRequest *a = pushed(&rec), *b = pushed(&rec);

	cr_expect_str_neq(a->series[0]->samples[0]->id, b->series[0]->samples[0]->id);
	/* no service: the name /ingest would use */
	cr_expect_str_eq(label(a->series[0], "service_name"), "unknown");
	ebprof__push__push_request__free_unpacked(a, NULL);
	ebprof__push__push_request__free_unpacked(b, NULL);
}

Test(remote_push, only_offcpu_is_pushed_and_only_with_data)
{
	const struct sink_profile cpu = { .type = "cpu" }, none = { .type = NULL },
				  empty = { .type = "offcpu" };
	uint8_t *body = (uint8_t *)"x";
	size_t len = 1;
	char *url = rhttp_push_url("http://h:4040/base");

	cr_expect_not(rhttp_push_wanted(&cpu));
	cr_expect_not(rhttp_push_wanted(&none));
	cr_expect_str_eq(rhttp_push_metric(&cpu), "process_cpu");
	cr_expect_eq(rhttp_push_body(&empty, &body, &len), -EINVAL);
	cr_expect_null(body);
	cr_expect_eq(len, 0);
	cr_expect_str_eq(url, "http://h:4040/base/push.v1.PusherService/Push");
	free(url);
}

/* Page faults go through the push API too, as the series "faults" (the
 * sample types faults/bytes would name no series /ingest knows). */
Test(remote_push, faults_pushed_as_their_own_series)
{
	static const uint8_t pprof[] = { 0x1f, 0x8b, 1, 2 };
	const struct sink_profile rec = { .type = "faults", .data = pprof, .len = sizeof(pprof) };
	Ebprof__Push__PushRequest *req;
	uint8_t *body = NULL;
	size_t len = 0;

	cr_expect(rhttp_push_wanted(&rec));
	cr_expect_str_eq(rhttp_push_metric(&rec), "faults");
	cr_assert_eq(rhttp_push_body(&rec, &body, &len), 0);
	req = ebprof__push__push_request__unpack(NULL, len, body);
	cr_assert_not_null(req);
	cr_assert_eq(req->n_series, 1);
	cr_expect_str_eq(label(req->series[0], "__name__"), "faults");
	ebprof__push__push_request__free_unpacked(req, NULL);
	free(body);
}

/* Memory profiles too, as Pyroscope's "memory" series. */
Test(remote_push, memory_pushed_as_memory)
{
	static const uint8_t pprof[] = { 0x1f, 0x8b, 1, 2 };
	const struct sink_profile rec = { .type = "memory", .data = pprof, .len = sizeof(pprof) };
	Ebprof__Push__PushRequest *req;
	uint8_t *body = NULL;
	size_t len = 0;

	cr_expect(rhttp_push_wanted(&rec));
	cr_expect_str_eq(rhttp_push_metric(&rec), "memory");
	cr_assert_eq(rhttp_push_body(&rec, &body, &len), 0);
	req = ebprof__push__push_request__unpack(NULL, len, body);
	cr_assert_not_null(req);
	cr_expect_str_eq(label(req->series[0], "__name__"), "memory");
	ebprof__push__push_request__free_unpacked(req, NULL);
	free(body);
}
