/* gowire: the event table against Go's own, varints, framing, byte-exact small traces,
 * stack caps. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"
#include "common/varint.h"
#include "encoder/gowire.h"
#include "test_util.h"

#define GO119_PARSER "/usr/lib/go-1.19/src/internal/trace/parser.go"

/* Go's EventDescriptions line for name: {"Name", ver, stack, []string{args...}, ...} */
static bool go_desc(const char *src, const char *name, int *type, int *nargs, bool *stack)
{
	char key[64];
	snprintf(key, sizeof key, "\tEv%s ", name);
	const char *def = strstr(src, key);   /* the constant: "EvName = N // ..." */
	if (!def || sscanf(strchr(def, '=') + 1, "%d", type) != 1)
		return false;
	snprintf(key, sizeof key, "{\"%s\", ", name);
	const char *d = strstr(src, key);
	if (!d)
		return false;
	d += strlen(key);
	d = strchr(d, ',') + 2;            /* skip the version */
	*stack = !strncmp(d, "true", 4);
	const char *args = strstr(d, "[]string{");
	const char *end = strchr(args, '}');
	*nargs = 0;
	for (const char *p = args + 9; p < end; p++)
		*nargs += *p == '"';
	*nargs /= 2;
	return true;
}

Test(gowire, table_matches_go_1_19_event_descriptions)
{
	FILE *f = fopen(GO119_PARSER, "r");
	if (!f)
		cr_skip_test("Go 1.19 sources not installed (%s)", GO119_PARSER);
	static char src[1 << 20];
	size_t n = fread(src, 1, sizeof src - 1, f);
	fclose(f);
	src[n] = 0;
	for (int i = 0; i < GT_GO_EVENT_COUNT; i++) {
		const struct gt_go_event_desc *d = &gt_go_events[i];
		int type, nargs;
		bool stack;
		cr_assert(go_desc(src, d->name, &type, &nargs, &stack), "%s not in Go's table", d->name);
		cr_expect_eq(d->type, type, "%s: type %d, Go says %d", d->name, d->type, type);
		if (i == GT_GO_STRING)
			continue; /* String's layout is special (id, len, bytes); Go lists no args */
		cr_expect_eq(d->nargs, nargs, "%s: %d args, Go says %d", d->name, d->nargs, nargs);
		cr_expect_eq(d->has_stack, stack, "%s: stack flag differs from Go's", d->name);
	}
}

Test(gowire, table_has_no_forbidden_events)
{
	static const char *const forbidden[] = {"GoInSyscall", "FutileWakeup", "GoStop",
						"GoStartLocal", "GoUnblockLocal", "GoSysExitLocal"};
	for (int i = 0; i < GT_GO_EVENT_COUNT; i++)
		for (size_t k = 0; k < sizeof forbidden / sizeof forbidden[0]; k++)
			cr_expect_str_neq(gt_go_events[i].name, forbidden[k]);
}

Test(gowire, varints)
{
	static const struct {
		uint64_t v;
		size_t len;
		uint8_t bytes[10];
	} cases[] = {
		{0, 1, {0}},
		{1, 1, {1}},
		{127, 1, {0x7f}},
		{128, 2, {0x80, 0x01}},
		{1000, 2, {0xe8, 0x07}},
		{16384, 3, {0x80, 0x80, 0x01}},
		{UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t out[10];
		size_t n = gt_uvarint_put(out, cases[i].v);
		cr_assert_eq(n, cases[i].len);
		cr_assert_eq(gt_uvarint_len(cases[i].v), cases[i].len);
		cr_assert_arr_eq(out, cases[i].bytes, n);
		uint64_t back;
		cr_assert_eq(gt_uvarint_get(out, out + n, &back), n);
		cr_assert_eq(back, cases[i].v);
		cr_assert_eq(gt_uvarint_get(out, out + n - 1, &back), n == 1 ? 0u : 0u);
	}
}

static uint8_t *write_trace(void (*body)(struct gt_wire *), size_t *len, const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	struct gt_wire *w = gt_wire_open_go119(fd, 3, NULL);
	cr_assert(w);
	body(w);
	cr_assert_eq(gt_wire_finish(w, GT_WIRE_FREQUENCY_NS), 0);
	gt_wire_free(w);
	off_t size = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc((size_t)size);
	cr_assert_eq(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	*len = (size_t)size;
	return buf;
}

static void tiny_body(struct gt_wire *w)
{
	uint64_t main_str = gt_wire_cstring(w, "main");
	cr_assert_eq(main_str, 1);
	cr_assert_eq(gt_wire_cstring(w, "main"), 1, "strings are interned");
	uint64_t a[3] = {2, 0, 0};
	gt_wire_event(w, 1, GT_GO_GO_CREATE, 1000, (uint64_t[]){1, 0, 0});
	(void)a;
	gt_wire_event(w, 1, GT_GO_GOMAXPROCS, 1001, (uint64_t[]){3, 0});
	gt_wire_event(w, 1, GT_GO_PROC_START, 1003, (uint64_t[]){2});
	gt_wire_event(w, 1, GT_GO_GO_START, 1008, (uint64_t[]){1, 1});
	gt_wire_event(w, 1, GT_GO_GO_PREEMPT, 1010, (uint64_t[]){0});
	gt_wire_event(w, 1, GT_GO_PROC_STOP, 1011, NULL);
}

Test(gowire, byte_exact_small_trace)
{
	size_t len;
	uint8_t *b = write_trace(tiny_body, &len, "tiny.trace");
	static const uint8_t want[] = {
		'g', 'o', ' ', '1', '.', '1', '9', ' ', 't', 'r', 'a', 'c', 'e', 0, 0, 0,
		/* P 1's batch: base = 0, then events */
		0x41, 0x01, 0x00,
		0xcd, 0x05, 0xe8, 0x07, 0x01, 0x00, 0x00,   /* GoCreate g=1 new=0 stk=0, delta 1000 */
		0x84, 0x01, 0x03, 0x00,                     /* Gomaxprocs 3, delta 1 */
		0x45, 0x02, 0x02,                           /* ProcStart thread 2, delta 2 */
		0x8e, 0x05, 0x01, 0x01,                     /* GoStart g=1 seq=1, delta 5 */
		0x52, 0x02, 0x00,                           /* GoPreempt stk=0, delta 2 */
		0x06, 0x01,                                 /* ProcStop, delta 1 */
		/* P 0's batch: the string, then the Frequency */
		0x41, 0x00, 0x00,
		0x25, 0x01, 0x04, 'm', 'a', 'i', 'n',
		0x02, 0x80, 0x94, 0xeb, 0xdc, 0x03,
	};
	cr_assert_eq(len, sizeof want, "length %zu, want %zu", len, sizeof want);
	cr_assert_arr_eq(b, want, sizeof want);
	free(b);
}

static void spec_examples_body(struct gt_wire *w)
{
	/* docs/formats/go119.md §1.3: GoStart g=2 seq=1 delta 5; GoCreate g=2 new=2 stk=5 delta 3 */
	gt_wire_event(w, 2, GT_GO_GO_START, 5, (uint64_t[]){2, 1});
	gt_wire_event(w, 2, GT_GO_GO_CREATE, 8, (uint64_t[]){2, 2, 5});
	gt_wire_event(w, GT_WIRE_P_NONE, GT_GO_GO_UNBLOCK, 1000, (uint64_t[]){2, 2, 0});
}

Test(gowire, spec_examples)
{
	size_t len;
	uint8_t *b = write_trace(spec_examples_body, &len, "spec.trace");
	static const uint8_t p2[] = {0x41, 0x02, 0x00, 0x8e, 0x05, 0x02, 0x01,
				     0xcd, 0x04, 0x03, 0x02, 0x02, 0x05};
	cr_assert_arr_eq(b + 16, p2, sizeof p2);
	/* P -1's batch header: 41 ff..ff 01 then base 0 */
	static const uint8_t pnone[] = {0x41, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0x01, 0x00};
	cr_assert_arr_eq(b + 16 + sizeof p2, pnone, sizeof pnone);
	free(b);
}

static void long_stack_body(struct gt_wire *w)
{
	struct gt_wire_frame f[300];
	char names[300][32];
	for (int i = 0; i < 300; i++) {
		snprintf(names[i], sizeof names[i], "function_number_%d", i);
		f[i] = (struct gt_wire_frame){0x7f0000401000ull + 16u * (unsigned)i, names[i],
					      "/src/some/long/path/file.c", (uint32_t)(1000 + i)};
	}
	gt_wire_define_stack(w, 7, f, 300);     /* cut by the 128-frame cap */
	for (int i = 0; i < 300; i++)            /* each frame a distinct, long file name */
		f[i].file = names[i];
	gt_wire_define_stack(w, 8, f, 100);
	gt_wire_event(w, 1, GT_GO_GO_CREATE, 10, (uint64_t[]){1, 7, 8});
	gt_wire_event(w, 1, GT_GO_GOMAXPROCS, 11, (uint64_t[]){3, 0});
	gt_wire_event(w, 1, GT_GO_PROC_START, 12, (uint64_t[]){2});
	gt_wire_event(w, 1, GT_GO_GO_START, 13, (uint64_t[]){1, 1});
	gt_wire_event(w, 1, GT_GO_GO_BLOCK_SYNC, 14, (uint64_t[]){8});
}

/* Finds the EvStack with id in the file and returns its payload length and frame count. */
static bool find_stack(const uint8_t *b, size_t len, uint64_t id, uint64_t *plen, uint64_t *k,
		       uint64_t *last_pc)
{
	for (size_t i = 16; i + 3 < len; i++) {
		if (b[i] != 0xc3)
			continue;
		uint64_t l, sid, kk;
		size_t o = i + 1, n;
		if (!(n = gt_uvarint_get(b + o, b + len, &l)))
			continue;
		o += n;
		size_t start = o;
		if (!(n = gt_uvarint_get(b + o, b + len, &sid)) || sid != id)
			continue;
		o += n;
		if (!(n = gt_uvarint_get(b + o, b + len, &kk)))
			continue;
		o += n;
		uint64_t pc = 0, v;
		for (uint64_t f = 0; f < kk; f++) {
			o += gt_uvarint_get(b + o, b + len, &pc);
			for (int j = 0; j < 3; j++)
				o += gt_uvarint_get(b + o, b + len, &v);
		}
		if (o - start != l)
			continue;
		*plen = l;
		*k = kk;
		*last_pc = pc;
		return true;
	}
	return false;
}

Test(gowire, stack_caps_and_readers_accept)
{
	size_t len;
	uint8_t *b = write_trace(long_stack_body, &len, "longstack.trace");
	uint64_t plen, k, last_pc;
	cr_assert(find_stack(b, len, 7, &plen, &k, &last_pc));
	cr_expect_eq(k, 128, "300 frames cut to %lu", (unsigned long)k);
	cr_expect_leq(plen, 2048);
	cr_expect_eq(last_pc, 0x7f0000401000ull + 16u * 299, "the outermost frame is kept");
	cr_assert(find_stack(b, len, 8, &plen, &k, &last_pc));
	cr_expect_leq(plen, 2048, "payload %lu", (unsigned long)plen);
	cr_expect_eq(last_pc, 0x7f0000401000ull + 16u * 99, "the outermost frame is kept");
	free(b);

	char path[4096];
	snprintf(path, sizeof path, "%s/longstack.trace", test_tmpdir());
	struct gt_events *t19 = gt_events_parse_119(path);
	char *t23 = gt_dump_123(path);
	cr_expect(t19, "Go 1.19 rejected the trace (its error is above)");
	cr_expect(t23, "Go 1.23 rejected the trace (its error is above)");
	cr_expect_eq(t19 ? count19(t19, "GoBlockSync") : 0, 1);
	gt_events_free(t19);
	free(t23);
}

Test(gowire, many_batches_per_p)
{
	/* more than one buffer's worth of events: several batches for the same P */
	char path[4096];
	snprintf(path, sizeof path, "%s/batches.trace", test_tmpdir());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	struct gt_wire *w = gt_wire_open_go119(fd, 2, NULL);
	gt_wire_event(w, 1, GT_GO_GO_CREATE, 1, (uint64_t[]){1, 0, 0});
	gt_wire_event(w, 1, GT_GO_GOMAXPROCS, 2, (uint64_t[]){2, 0});
	gt_wire_event(w, 1, GT_GO_PROC_START, 3, (uint64_t[]){2});
	uint64_t t = 4, seq = 0;
	for (int i = 0; i < 20000; i++) {
		gt_wire_event(w, 1, GT_GO_GO_START, t++, (uint64_t[]){1, ++seq});
		gt_wire_event(w, 1, GT_GO_GO_PREEMPT, t++, (uint64_t[]){0});
	}
	gt_wire_event(w, 1, GT_GO_GO_START, t, (uint64_t[]){1, ++seq});
	gt_wire_event(w, 1, GT_GO_GO_PREEMPT, t - 1, (uint64_t[]){0}); /* clamped, not backwards */
	cr_assert_eq(gt_wire_finish(w, GT_WIRE_FREQUENCY_NS), 0);
	struct gt_wire_stats st;
	gt_wire_stats(w, &st);
	gt_wire_free(w);
	close(fd);
	cr_expect_gt(st.batches, 3);
	cr_expect_eq(st.ticks_clamped, 1);
	struct gt_events *t19 = gt_events_parse_119(path);
	cr_assert(t19, "Go 1.19 rejected the trace (its error is above)");
	cr_expect_eq(count19(t19, "GoStart"), 20001);
	gt_events_free(t19);
	char *t23 = gt_dump_123(path);
	cr_expect(t23, "Go 1.23 rejected the trace (its error is above)");
	free(t23);
}
