// SPDX-License-Identifier: BSD-2-Clause
/*
 * The file format of a remote's queue (remote_queue.h): "EBPQ1\n", a
 * one-line JSON header with the record's metadata, the length and CRC32
 * of the pprof bytes, then the bytes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "remote_queue.h"
#include "util/log.h"
#include "util/jsonutil.h"

/* The one-line header of rec: its metadata, the length and CRC32 of the
 * pprof bytes. NULL on -ENOMEM. */
static json_t *header(const struct sink_profile *rec)
{
	json_t *labels = json_array();

	for (size_t i = 0; labels && i < rec->nlabels; i++) {
		json_t *pair = json_pack("[o, o]", json_lossy_string(rec->labels[i].key),
					 json_lossy_string(rec->labels[i].value));

		if (json_array_append_new(labels, pair)) {
			json_decref(labels);
			return NULL;
		}
	}
	if (!labels)
		return NULL;
	/* "o" takes the references, on failure too (jansson >= 2.13). */
	return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:I, s:I}", "start_ns",
			 (json_int_t)rec->start_ns, "end_ns", (json_int_t)rec->end_ns, "pid",
			 (json_int_t)rec->pid, "type", json_lossy_string(rec->type), "service",
			 json_lossy_string(rec->service), "comm", json_lossy_string(rec->comm),
			 "backend_type", json_lossy_string(rec->backend_type), "labels", labels,
			 "len", (json_int_t)rec->len, "crc32",
			 (json_int_t)crc32_z(0, rec->data, rec->len));
}

/* The whole file for rec in *buf (malloc'ed). */
int rq_serialize(const struct sink_profile *rec, uint8_t **buf, size_t *len)
{
	json_t *hdr = header(rec);
	char *text = hdr ? json_dumps(hdr, JSON_COMPACT) : NULL;
	size_t tlen;
	int err = 0;

	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	tlen = strlen(text);
	*len = RQ_MAGIC_LEN + tlen + 1 + rec->len;
	*buf = malloc(*len ? *len : 1);
	if (!*buf) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(*buf, RQ_MAGIC, RQ_MAGIC_LEN);
	memcpy(*buf + RQ_MAGIC_LEN, text, tlen);
	(*buf)[RQ_MAGIC_LEN + tlen] = '\n';
	if (rec->len)
		memcpy(*buf + RQ_MAGIC_LEN + tlen + 1, rec->data, rec->len);
out:
	free(text);
	json_decref(hdr);
	return err;
}

/* An optional string member: NULL when absent or null; -1 when not a
 * string. */
static int opt_str(json_t *obj, const char *key, const char **out)
{
	json_t *j = json_object_get(obj, key);

	*out = NULL;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return -1;
	*out = json_string_value(j);
	return 0;
}

static int get_int(json_t *obj, const char *key, json_int_t *out)
{
	json_t *j = json_object_get(obj, key);

	if (!json_is_integer(j))
		return -1;
	*out = json_integer_value(j);
	return 0;
}

/* Parse a whole file (it takes buf, even on error). -EBADMSG when
 * corrupt. */
int rq_parse_item(uint8_t *buf, size_t len, uint64_t seq, struct rq_item **out)
{
	struct rq_item *it = calloc(1, sizeof(*it));
	json_int_t start, end, pid, plen, crc;
	const uint8_t *nl;
	json_t *hdr = NULL, *labels;
	size_t hlen, i;

	if (!it) {
		free(buf);
		return -ENOMEM;
	}
	it->file = buf;
	it->seq = seq;
	if (len < RQ_MAGIC_LEN + 2 || memcmp(buf, RQ_MAGIC, RQ_MAGIC_LEN))
		goto bad;
	nl = memchr(buf + RQ_MAGIC_LEN, '\n', len - RQ_MAGIC_LEN);
	if (!nl)
		goto bad;
	hlen = (size_t)(nl - (buf + RQ_MAGIC_LEN));
	hdr = json_loadb((const char *)buf + RQ_MAGIC_LEN, hlen, JSON_REJECT_DUPLICATES, NULL);
	it->hdr = hdr;
	if (!json_is_object(hdr))
		goto bad;
	if (get_int(hdr, "start_ns", &start) || get_int(hdr, "end_ns", &end) ||
	    get_int(hdr, "pid", &pid) || get_int(hdr, "len", &plen) || get_int(hdr, "crc32", &crc))
		goto bad;
	if (pid < 0 || pid > UINT32_MAX || plen < 0 ||
	    (uint64_t)plen != len - RQ_MAGIC_LEN - hlen - 1)
		goto bad;
	if (opt_str(hdr, "type", &it->rec.type) || opt_str(hdr, "service", &it->rec.service) ||
	    opt_str(hdr, "comm", &it->rec.comm) ||
	    opt_str(hdr, "backend_type", &it->rec.backend_type))
		goto bad;
	labels = json_object_get(hdr, "labels");
	if (!json_is_array(labels))
		goto bad;
	it->kvs = calloc(json_array_size(labels) + 1, sizeof(*it->kvs));
	if (!it->kvs) {
		rq_item_free(it);
		return -ENOMEM;
	}
	for (i = 0; i < json_array_size(labels); i++) {
		json_t *pair = json_array_get(labels, i);

		if (!json_is_array(pair) || json_array_size(pair) != 2 ||
		    !json_is_string(json_array_get(pair, 0)) ||
		    !json_is_string(json_array_get(pair, 1)))
			goto bad;
		it->kvs[i].key = json_string_value(json_array_get(pair, 0));
		it->kvs[i].value = json_string_value(json_array_get(pair, 1));
	}
	it->rec.start_ns = start;
	it->rec.end_ns = end;
	it->rec.pid = (uint32_t)pid;
	it->rec.labels = it->kvs;
	it->rec.nlabels = i;
	it->rec.data = nl + 1;
	it->rec.len = (size_t)plen;
	if ((json_int_t)crc32_z(0, it->rec.data, it->rec.len) != crc)
		goto bad;
	*out = it;
	return 0;
bad:
	rq_item_free(it);
	return -EBADMSG;
}

void rq_item_free(struct rq_item *it)
{
	if (!it)
		return;
	json_decref(it->hdr);
	free(it->file);
	free(it->kvs);
	free(it);
}
