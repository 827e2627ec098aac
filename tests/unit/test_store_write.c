// SPDX-License-Identifier: BSD-2-Clause
/*
 * The on-disk profile store: names (sanitized, formatted, parsed), the
 * write/list round trip with labels, name collisions, bad arguments.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "sinks/store/store.h"
#include "sinks/store/store_internal.h"
#include "cli/store_select.h"
#include "store_env.h"

TestSuite(store, .init = store_setup, .fini = store_teardown, .timeout = 120);

Test(store, names_sanitize_format_parse)
{
	char buf[STORE_NAME_MAX], c[STORE_COMPONENT_MAX + 1];
	struct store_name nm;
	int64_t day;

	store_sanitize("client backend", c);
	cr_assert_str_eq(c, "client_backend");
	store_sanitize("../etc/x-y", c);
	cr_assert_str_eq(c, "_._etc_x_y");
	store_sanitize("", c);
	cr_assert_str_eq(c, "_");
	store_sanitize("b\xc3\xa4r", c);
	cr_assert_str_eq(c, "b__r");

	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "postgres", 4242, "client backend",
				       PTYPE_CPU, 0),
		     0);
	cr_assert_str_eq(buf, "221320-postgres-4242-client_backend.pb.gz");
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "pg-x", 7, NULL, PTYPE_CPU, 2), 0);
	cr_assert_str_eq(buf, "221320-pg_x-7-2.pb.gz");

	cr_assert_eq(store_date_parse("2023-11-14", &day), 0);
	cr_assert_eq(day, T0 - T0 % 86400);
	cr_assert_eq(store_date_parse("2023-02-30", &day), -EINVAL);
	cr_assert_eq(store_date_parse("2023-1-14", &day), -EINVAL);

	cr_assert_eq(store_name_parse("221320-postgres-4242-client_backend-3.pb.gz", day, &nm), 0);
	cr_assert_eq(nm.start_s, T0);
	cr_assert_str_eq(nm.comm, "postgres");
	cr_assert_eq(nm.pid, 4242);
	cr_assert_str_eq(nm.backend_type, "client_backend");
	cr_assert_eq(nm.suffix, 3);
	cr_assert_eq(store_name_parse("221320-pg_x-7-2.pb.gz", day, &nm), 0);
	cr_assert_eq(nm.suffix, 2);
	cr_assert_str_eq(nm.backend_type, "");
	cr_assert_eq(store_name_parse("221320-postgres-7.pb.gz", day, &nm), 0);
	cr_assert_eq(nm.pid, 7);
	cr_assert_eq(nm.type, PTYPE_CPU);
	/* an off-CPU profile beside the CPU one of the same process */
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "postgres", 4242, "client backend",
				       PTYPE_OFFCPU, 1),
		     0);
	cr_assert_str_eq(buf, "221320-postgres-4242-client_backend-1.offcpu.pb.gz");
	cr_assert_eq(store_name_parse(buf, day, &nm), 0);
	cr_assert_eq(nm.type, PTYPE_OFFCPU);
	cr_assert_eq(nm.pid, 4242);
	cr_assert_str_eq(nm.backend_type, "client_backend");
	cr_assert_eq(nm.suffix, 1);
	cr_assert_eq(store_name_parse("221320-postgres-7.offcpu.pb.gz", day, &nm), 0);
	cr_assert(nm.type == PTYPE_OFFCPU && nm.pid == 7);
	cr_assert_eq(store_name_parse(".offcpu.pb.gz", day, &nm), -EINVAL);
	/* page faults, by the same rule */
	cr_assert_eq(store_name_format(buf, sizeof(buf), T0, "cc1", 77, NULL, PTYPE_FAULTS, 0), 0);
	cr_assert_str_eq(buf, "221320-cc1-77.faults.pb.gz");
	cr_assert_eq(store_name_parse(buf, day, &nm), 0);
	cr_assert(nm.type == PTYPE_FAULTS && nm.pid == 77);
	cr_assert_str_eq(nm.comm, "cc1");
	cr_assert_eq(store_name_parse(".faults.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("index.jsonl", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("garbage.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("256000-postgres-7.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("221320-postgres-x.pb.gz", day, &nm), -EINVAL);
	cr_assert_eq(store_name_parse("221320-pg/x-7.pb.gz", day, &nm), -EINVAL);
	cr_assert(store_is_temp(".profile.tmp.12.ab"));
	cr_assert(store_is_temp("index.jsonl.tmp.12.ab"));
	cr_assert_not(store_is_temp("221320-postgres-7.pb.gz"));
}

Test(store, write_list_round_trip)
{
	struct rec a = R(4242, T0, "client backend"), b = R(77, T0 + 60, "checkpointer"),
		   c = R(5, T0 + 7200, NULL); /* next day (UTC) */
	char pa[1024], pb[1024], pc[1024], want[1200];
	struct store_stats st;
	struct store_entry *e;
	struct store *s = open_store(tmp, 0, 0);
	uint8_t *data;
	size_t n, len;

	a.end_ns = a.start_ns + 60 * S + 123;
	c.service = "db 2";
	c.size = 300;
	cr_assert_eq(put(s, &c, pc, sizeof(pc)), 0);
	cr_assert_eq(put(s, &a, pa, sizeof(pa)), 0);
	cr_assert_eq(put(s, &b, pb, sizeof(pb)), 0);
	snprintf(want, sizeof(want), "%s/db1/2023-11-14/221320-postgres-4242-client_backend.pb.gz",
		 tmp);
	cr_assert_str_eq(pa, want);
	snprintf(want, sizeof(want), "%s/db_2/2023-11-15/001320-postgres-5.pb.gz", tmp);
	cr_assert_str_eq(pc, want);
	store_get_stats(s, &st);
	cr_assert_eq(st.written, 3);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.bytes, 500);
	cr_assert_eq(st.write_errors, 0);
	store_close(s);

	cr_assert_eq(read_file(pa, &data, &len), 0);
	cr_assert_eq(len, 100);
	cr_assert_eq(data[1], (uint8_t)(4242 + 7));
	free(data);

	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(e[0].path, pa);
	cr_assert_eq(e[0].start_ns, a.start_ns);
	cr_assert_eq(e[0].end_ns, a.end_ns);
	cr_assert_eq(e[0].pid, 4242);
	cr_assert_eq(e[0].size, 100);
	cr_assert_eq(e[0].nlabels, 7);
	cr_assert_str_eq(e[0].labels[0].key, "service"); /* the record's order */
	cr_assert_str_eq(lab(&e[0], "type"), "cpu");
	cr_assert_str_eq(lab(&e[0], "service"), "db1");
	cr_assert_str_eq(lab(&e[0], "pid"), "4242");
	cr_assert_str_eq(lab(&e[0], "comm"), "postgres");
	cr_assert_str_eq(lab(&e[0], "exe"), "/usr/lib/postgresql/15/bin/postgres");
	cr_assert_str_eq(lab(&e[0], "backend_type"), "client backend");
	cr_assert_str_eq(lab(&e[0], "pg_user"), "alice");
	cr_assert_str_eq(e[1].path, pb);
	cr_assert_str_eq(lab(&e[1], "backend_type"), "checkpointer");
	cr_assert_str_eq(e[2].path, pc);
	cr_assert_str_eq(lab(&e[2], "service"), "db 2", "label keeps the unsanitized name");
	cr_assert_null(lab(&e[2], "backend_type"));
	cr_assert_eq(e[2].size, 300);
	store_entries_free(e, n);
	cr_assert_eq(temps_under(tmp), 0);
}

Test(store, name_collisions_get_suffixes)
{
	struct store *s = open_store(tmp, 0, 0);
	char p[3][1024];
	struct store_entry *e;
	uint8_t *d;
	size_t n, len;

	for (int i = 0; i < 3; i++) {
		struct rec r = R(4242, T0, "walwriter");

		r.fill = (uint8_t)(10 * i);
		r.start_ns += i; /* same second */
		cr_assert_eq(put(s, &r, p[i], sizeof(p[i])), 0);
	}
	cr_assert(strstr(p[0], "/221320-postgres-4242-walwriter.pb.gz"));
	cr_assert(strstr(p[1], "/221320-postgres-4242-walwriter-1.pb.gz"));
	cr_assert(strstr(p[2], "/221320-postgres-4242-walwriter-2.pb.gz"));
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(read_file(p[i], &d, &len), 0);
		cr_assert_eq(d[0], (uint8_t)(10 * i), "file %d was overwritten", i);
		free(d);
	}
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(e[i].start_ns, T0 * S + (int64_t)i, "from the index: ns precision");
		cr_assert_str_eq(e[i].path, p[i]);
		cr_assert_str_eq(lab(&e[i], "backend_type"), "walwriter");
	}
	store_entries_free(e, n);
}

Test(store, bad_arguments)
{
	struct store_opts o = { .dir = "" };
	struct sink_profile r = { 0 };
	struct store *s;
	char file[1100];

	cr_assert_eq(store_open(&o, &s), -EINVAL);
	o.dir = tmp;
	o.max_bytes = -1;
	cr_assert_eq(store_open(&o, &s), -EINVAL);
	snprintf(file, sizeof(file), "%s/file", tmp);
	write_text(file, "x");
	o.dir = file;
	o.max_bytes = 0;
	cr_assert_lt(store_open(&o, &s), 0);
	s = open_store(tmp, 0, 50);
	cr_assert_eq(store_write(s, &r, NULL, 0), -EINVAL, "no data");
	{
		struct rec big = R(1, T0, NULL);

		cr_assert_eq(put(s, &big, NULL, 0), -EFBIG, "larger than the whole store");
	}
	store_close(s);
}
