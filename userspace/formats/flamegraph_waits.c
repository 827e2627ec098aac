// SPDX-License-Identifier: BSD-2-Clause
/*
 * Off-CPU flamegraphs (flamegraph_internal.h): the wait-event frame of a
 * sample, the PostgreSQL wait class it belongs to, and the colours: one
 * hue family per class (Lock red, LWLock pink, IO blue, Client green, IPC
 * purple, Timeout amber, Activity teal, BufferPin orange, Extension lime),
 * greys for waits without a wait event (by state), brown for classes this
 * file does not know. Frames vary in lightness by a hash of their name so
 * neighbours stay apart and a function keeps its colour across graphs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flamegraph_internal.h"

static const struct {
	const char *type; /* PostgreSQL's wait_event_type */
	const char *legend, *css;
	double hue, sat; /* HSL: degrees, 0..1 */
} classes[W_NCLASSES] = {
	[W_NONE] = { "", "", "w-none", 0, 0 },
	[W_LOCK] = { "Lock", "Lock", "w-lock", 2, 0.72 },
	[W_LWLOCK] = { "LWLock", "LWLock", "w-lwlock", 325, 0.62 },
	[W_IO] = { "IO", "IO", "w-io", 212, 0.68 },
	[W_CLIENT] = { "Client", "Client", "w-client", 122, 0.45 },
	[W_IPC] = { "IPC", "IPC", "w-ipc", 272, 0.50 },
	[W_TIMEOUT] = { "Timeout", "Timeout", "w-timeout", 46, 0.80 },
	[W_ACTIVITY] = { "Activity", "Activity", "w-activity", 178, 0.55 },
	[W_BUFFERPIN] = { "BufferPin", "BufferPin", "w-bufferpin", 26, 0.90 },
	[W_EXTENSION] = { "Extension", "Extension", "w-extension", 80, 0.55 },
	[W_OTHER] = { "", "other wait", "w-other", 20, 0.30 },
	[W_STATE] = { "", "no wait event", "w-state", 0, 0 },
};

bool flamegraph_sample_is_idle(const struct profile *p, const struct pf_sample *s)
{
	char buf[16];
	const char *state = profile_sample_label(p, s, "state", buf, sizeof(buf));

	return state && !strcmp(state, "idle");
}

const char *fg_wait_name(const struct profile *p, const struct pf_sample *s, char *buf, size_t len)
{
	char tb[64], eb[64], sb[64];
	const char *type = profile_sample_label(p, s, "wait_event_type", tb, sizeof(tb));
	const char *event = profile_sample_label(p, s, "wait_event", eb, sizeof(eb));
	const char *state = profile_sample_label(p, s, "state", sb, sizeof(sb));

	if (!state || !*state)
		state = "unknown";
	/* "uninstrumented": a backend that had set no wait event */
	if (type && *type && event && *event && strcmp(type, "uninstrumented"))
		snprintf(buf, len, "%s:%s%s", type, event, !strcmp(state, "idle") ? " (idle)" : "");
	else
		snprintf(buf, len, "%s", state);
	return buf;
}

enum fg_wait fg_wait_class(const char *wait_name)
{
	size_t n = strcspn(wait_name, ":");

	if (!wait_name[n])
		return W_STATE;
	for (int i = W_LOCK; i < W_OTHER; i++)
		if (strlen(classes[i].type) == n && !strncmp(wait_name, classes[i].type, n))
			return (enum fg_wait)i;
	return W_OTHER;
}

const char *fg_wait_legend(enum fg_wait w)
{
	return w > W_NONE && w < W_NCLASSES ? classes[w].legend : "";
}

const char *fg_wait_css(enum fg_wait w)
{
	return w < W_NCLASSES ? classes[w].css : classes[W_OTHER].css;
}

/* HSL (h degrees, s and l 0..1) to RGB. */
static struct fg_rgb hsl(double h, double s, double l)
{
	double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h < 0 ? h + 360 : h, 360) / 60;
	double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = l - c / 2, r = 0, g = 0, b = 0;

	if (hp < 1)
		r = c, g = x;
	else if (hp < 2)
		r = x, g = c;
	else if (hp < 3)
		g = c, b = x;
	else if (hp < 4)
		g = x, b = c;
	else if (hp < 5)
		r = x, b = c;
	else
		r = c, b = x;
	return (struct fg_rgb){ (unsigned)lround((r + m) * 255), (unsigned)lround((g + m) * 255),
				(unsigned)lround((b + m) * 255) };
}

/* Waits without a wait event: greys, tinted by state. */
static void state_tint(const char *state, double *hue, double *sat)
{
	*hue = 0;
	*sat = 0;
	if (!strcmp(state, "disk")) {
		*hue = 215;
		*sat = 0.16;
	} else if (!strcmp(state, "runnable")) {
		*hue = 40;
		*sat = 0.18;
	}
}

struct fg_rgb fg_wait_color(enum fg_wait w, const char *wait_name, enum fg_kind kind,
			    const char *name)
{
	uint64_t h = hm_hash_str(name);
	double jitter = (double)(h & 0xff) / 255, hue, sat, l;

	if (w <= W_NONE || w >= W_NCLASSES)
		w = W_OTHER;
	hue = classes[w].hue;
	sat = classes[w].sat;
	if (w == W_STATE)
		state_tint(wait_name, &hue, &sat);
	hue += ((double)((h >> 8) & 0xff) / 255 - 0.5) * 12;
	/* kernel frames lighter than the user frames above them */
	l = (kind == K_KERNEL ? 0.72 : kind == K_WAIT ? 0.50 : 0.56) + jitter * 0.14;
	return hsl(hue, sat, l);
}

struct fg_rgb fg_wait_legend_color(enum fg_wait w)
{
	if (w <= W_NONE || w >= W_NCLASSES)
		w = W_OTHER;
	return hsl(classes[w].hue, classes[w].sat, 0.6);
}
