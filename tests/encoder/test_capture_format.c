/* The capture format's fact table (include/gotrace/capture.h, GT_FACTS): ids, names and
 * payload sizes; and the encoder's reader against the preload tests' reader on one built
 * capture holding every fact on several CPUs. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "encoder/capture_reader.h"    /* the encoder's */
#include "encoder/syscalls.h"
#include "../preload/capture_reader.h" /* the preload tests' (and gtcap-dump's) */
#include "test_util.h"

struct fact_row {
	unsigned id;
	unsigned value;         /* GT_<NAME> as the enum has it */
	const char *name;
	int payload;            /* minimum payload bytes */
	const char *aux;
};

static const struct fact_row facts[] = {
#define FACT_ROW(id, name, payload, aux) {id, GT_##name, #name, (int)(payload), aux},
	GT_FACTS(FACT_ROW)
#undef FACT_ROW
};
#define N_FACTS (sizeof facts / sizeof *facts)

Test(capture_format, ids_are_1_to_count_without_gaps_and_names_unique)
{
	bool seen[256] = {false};
	cr_assert(GT_FACT_COUNT <= 256, "gt_rec.type is one byte");
	cr_assert_eq(N_FACTS, GT_FACT_COUNT - 1, "%zu facts for GT_FACT_COUNT %u", N_FACTS,
		     (unsigned)GT_FACT_COUNT);
	for (size_t i = 0; i < N_FACTS; i++) {
		cr_assert(facts[i].id >= 1 && facts[i].id < GT_FACT_COUNT, "%s: id %u",
			  facts[i].name, facts[i].id);
		cr_assert(!seen[facts[i].id], "id %u twice", facts[i].id);
		seen[facts[i].id] = true;
		for (size_t j = 0; j < i; j++)
			cr_expect_str_neq(facts[i].name, facts[j].name);
	}
	/* 0 is an uncommitted word, not a fact; anything past the table is garbage. */
	const unsigned not_facts[] = {GT_NONE, GT_FACT_COUNT, 255};
	for (size_t i = 0; i < sizeof not_facts / sizeof *not_facts; i++) {
		unsigned t = not_facts[i];
		cr_expect_str_eq(gt_fact_name(t), "?", "type %u", t);
		cr_expect_str_eq(capture_type_name((int)t), "?", "type %u", t);
		cr_expect_eq(gt_fact_min_payload(t), -1, "type %u", t);
		cr_expect_eq(gt_capture_min_payload((uint8_t)t), -1, "type %u", t);
	}
}

/* Parameters are indices: Criterion may run a test in a fresh process, where the parent's
 * pointers (to names) mean nothing. */
ParameterizedTestParameters(capture_format, fact)
{
	static size_t rows[N_FACTS];
	for (size_t i = 0; i < N_FACTS; i++)
		rows[i] = i;
	return cr_make_param_array(size_t, rows, N_FACTS);
}

ParameterizedTest(size_t *row, capture_format, fact)
{
	const struct fact_row *f = &facts[*row];
	cr_expect_eq(f->value, f->id, "GT_%s", f->name);
	cr_expect_gt(strlen(f->name), 0);
	cr_expect_gt(strlen(f->aux), 0, "%s: aux says nothing", f->name);
	cr_expect_str_eq(gt_fact_name(f->id), f->name);
	cr_expect_str_eq(capture_type_name((int)f->id), f->name, "the preload tests' reader");
	cr_expect_eq(gt_fact_min_payload(f->id), f->payload, "%s", f->name);
	cr_expect_eq(gt_capture_min_payload((uint8_t)f->id), f->payload, "%s: the encoder's reader",
		     f->name);
	/* Records are whole words: the fixed part must end on one so that a variable tail
	 * (STACK's PCs) starts aligned and a minimal record carries no padding. */
	cr_expect_eq(f->payload % 8, 0, "%s: %d bytes", f->name, f->payload);
	unsigned words = GT_REC_WORDS(f->payload);
	cr_expect_eq(words * 8u, sizeof(struct gt_rec) + (size_t)f->payload, "%s", f->name);
	cr_expect_geq(words * 8u, 16u, "%s", f->name);
	cr_expect_leq(words, GT_MAX_RECORD_WORDS, "%s", f->name);
}

/* ---- the two readers on one capture ---------------------------------------------------- */

#define N_CPUS 4u
#define ROUNDS 100u
#define T0 1000000ull
#define TICK 1000ull            /* built record k is stamped T0 + (k + 1) * TICK */

struct built {
	uint64_t off;           /* in the image */
	uint32_t cpu, thread;
	uint8_t type, aux;
	size_t payload_len;     /* padded to whole words, as the readers see it */
};

static struct built built[ROUNDS * GT_FACT_COUNT];
static size_t n_built;

static void note(uint64_t off, uint32_t cpu, uint8_t type, uint8_t aux, uint32_t thread,
		 size_t payload_len)
{
	cr_assert_neq(off, 0, "the builder refused a %s record", gt_fact_name(type));
	cr_expect_geq(payload_len, (size_t)gt_fact_min_payload(type), "%s", gt_fact_name(type));
	built[n_built++] = (struct built){off, cpu, thread, type, aux,
					  GT_REC_WORDS(payload_len) * 8u - sizeof(struct gt_rec)};
}

/* One record of `type`, varied by round i.  A fact added to the table fails here until the
 * test builds it. */
static void build_fact(struct gt_cb *cb, unsigned type, uint32_t cpu, uint64_t t, unsigned i)
{
	uint32_t th = 1 + i % 7;
	uint8_t kind = 1 + i % (GT_BK_COUNT - 1);
	uint64_t obj = 0x7f0000001000ull + 64 * i;
	char text[32];
	switch (type) {
	case GT_THREAD_NEW:
		note(gt_cb_thread_new(cb, cpu, t, th, th + 1, 0, 0x401000 + i), cpu, type, 0, th,
		     sizeof(struct gt_p_thread_new));
		break;
	case GT_THREAD_START:
		note(gt_cb_thread_start(cb, cpu, t, th, 100 + i, 0x401000), cpu, type, 0, th,
		     sizeof(struct gt_p_thread_start));
		break;
	case GT_THREAD_END:
		note(gt_cb_thread_end(cb, cpu, t, th), cpu, type, GT_END_RETURN, th, 0);
		break;
	case GT_THREAD_NAME:
		snprintf(text, sizeof text, "worker-%u", i);
		note(gt_cb_thread_name(cb, cpu, t, th, text), cpu, type, 0, th,
		     sizeof(struct gt_p_thread_name));
		break;
	case GT_THREAD_EXISTING:
		note(gt_cb_thread_existing(cb, cpu, t, th, i & 1, 0), cpu, type, i & 1, th,
		     sizeof(struct gt_p_thread_start));
		break;
	case GT_BLOCK_BEGIN:
		note(gt_cb_block_begin(cb, cpu, t, th, kind, obj, 0), cpu, type, kind, th,
		     sizeof(struct gt_p_block));
		break;
	case GT_BLOCK_END:
		note(gt_cb_block_end(cb, cpu, t, th, kind, obj, GT_BR_OK), cpu, type, kind, th,
		     sizeof(struct gt_p_block_end));
		break;
	case GT_WAKE:
		note(gt_cb_wake(cb, cpu, t, th, kind, obj, 1, 0), cpu, type, kind, th,
		     sizeof(struct gt_p_wake));
		break;
	case GT_SYSCALL_BEGIN:
		note(gt_cb_syscall_begin(cb, cpu, t, th, i % 6, 7, 3, 0), cpu, type, i % 6, th,
		     sizeof(struct gt_p_syscall));
		break;
	case GT_SYSCALL_END:
		note(gt_cb_syscall_end(cb, cpu, t, th, 7, 1), cpu, type, 0, th,
		     sizeof(struct gt_p_syscall_end));
		break;
	case GT_YIELD:
		note(gt_cb_yield(cb, cpu, t, th, 0), cpu, type, 0, th,
		     sizeof(struct gt_p_stackonly));
		break;
	case GT_STACK: {
		uint64_t pcs[5] = {0x401100 + i, 0x401200, 0x401300, 0x401400, 0x401500};
		uint32_t n = 1 + i % 5;
		note(gt_cb_stack(cb, cpu, t, 1 + i, pcs, n), cpu, type, 0, 0,
		     sizeof(struct gt_p_stack) + 8 * n);
		break;
	}
	case GT_MODULE: {
		const uint8_t build_id[20] = {0xab, 0xcd, (uint8_t)i};
		uint16_t id_len = (uint16_t)(i % 3 * 10);
		int len = snprintf(text, sizeof text, "/usr/lib/libx%u.so", i);
		note(gt_cb_module(cb, cpu, t, text, build_id, id_len, 0x7f0000000000ull,
				  0x7f0000000000ull, 0x7f0000100000ull, 0),
		     cpu, type, 0, 0, sizeof(struct gt_p_module) + id_len + (size_t)len);
		break;
	}
	case GT_MODULE_UNLOAD: {
		struct gt_p_module_unload p = {0x7f0000000000ull, 0x7f0000000000ull};
		note(gt_cb_record(cb, cpu, GT_MODULE_UNLOAD, 0, 0, t, &p, sizeof p), cpu, type, 0,
		     0, sizeof p);
		break;
	}
	case GT_CLOCK:
		note(gt_cb_clock(cb, cpu, t, t), cpu, type, 0, 0, sizeof(struct gt_p_clock));
		break;
	case GT_NOTICE:
		note(gt_cb_notice(cb, cpu, t, 1 + i % 4, i), cpu, type, 1 + i % 4, 0,
		     sizeof(struct gt_p_notice));
		break;
	case GT_USER: {
		const char *msg = i & 1 ? "a message" : NULL;
		note(gt_cb_user(cb, cpu, t, th, 1 + i % 5, 1 + i, 0, 0, "region", msg), cpu, type,
		     1 + i % 5, th, sizeof(struct gt_p_user) + 6 + (msg ? strlen(msg) : 0));
		break;
	}
	case GT_PROCESS: {
		struct gt_p_process p = {4243 + i, 0};
		note(gt_cb_record(cb, cpu, GT_PROCESS, 1 + i % 3, th, t, &p, sizeof p), cpu, type,
		     1 + i % 3, th, sizeof p);
		break;
	}
	case GT_CAPTURE_END:
		note(gt_cb_capture_end(cb, cpu, t), cpu, type, 0, 0, 0);
		break;
	case GT_PROCESS_NAME: {
		/* arguments NUL-separated, of varied lengths */
		int len = snprintf(text, sizeof text, "prog%c-x%c%u", 0, 0, i);
		note(gt_cb_process_name(cb, cpu, t, 1 + i % 3, "prog", text, (size_t)len), cpu,
		     type, 1 + i % 3, 0, sizeof(struct gt_p_process_name) + (size_t)len);
		break;
	}
	case GT_FD: {
		struct gt_p_fd p = {.fd = (int32_t)i, .obj = GT_OBJ_KERNEL | i};
		note(gt_cb_record(cb, cpu, GT_FD, GT_FD_PIPE, 0, t, &p, sizeof p), cpu, type,
		     GT_FD_PIPE, 0, sizeof p);
		break;
	}
	case GT_LOCK_ACQUIRE:
	case GT_LOCK_RELEASE: {
		struct gt_p_lock p = {.obj = 0x5000 + 64 * i, .stack = type == GT_LOCK_ACQUIRE ? i : 0,
				      .flags = type == GT_LOCK_ACQUIRE ? i % 16 : 0};
		uint8_t kind = (uint8_t)(GT_BK_MUTEX + i % 3);
		note(gt_cb_record(cb, cpu, type, kind, th, t, &p, sizeof p), cpu, type, kind, th,
		     sizeof p);
		break;
	}
	default:
		cr_assert_fail("no record built for fact %u (%s)", type, gt_fact_name(type));
	}
}

/* Every fact ROUNDS times, spread over the CPUs; small chunks so that each CPU's records
 * cross chunks interleaved with the other CPUs'. */
static struct gt_cb *build_all(const char *path)
{
	struct gt_cb *cb = gt_cb_new(N_CPUS, 4096, T0);
	n_built = 0;
	for (unsigned i = 0; i < ROUNDS; i++)
		for (unsigned type = 1; type < GT_FACT_COUNT; type++)
			build_fact(cb, type, (i * 3 + type) % N_CPUS, T0 + (n_built + 1) * TICK, i);
	cr_assert_gt(gt_cb_header(cb)->n_chunks, 2 * N_CPUS, "records should cross chunks");
	cr_assert_eq(gt_cb_write(cb, path), 0);
	return cb;
}

/* The built record a reader delivered at tsc, checked field by field against what was
 * built (the payload against the image; renumbers: its calls in the encoder's numbering);
 * its index. */
static size_t check_record(const uint8_t *image, const char *reader, bool renumbers,
			   const struct gt_rec *h, uint32_t cpu, const void *payload,
			   size_t payload_len, bool *seen)
{
	cr_assert(h->tsc > T0 && (h->tsc - T0) % TICK == 0 && (h->tsc - T0) / TICK <= n_built,
		  "%s: tsc %llu was never built", reader, (unsigned long long)h->tsc);
	size_t k = (size_t)((h->tsc - T0) / TICK - 1);
	const struct built *b = &built[k];
	cr_assert(!seen[k], "%s: record %zu twice", reader, k);
	seen[k] = true;
	cr_expect_eq(h->type, b->type, "%s: record %zu", reader, k);
	cr_expect_eq(h->aux, b->aux, "%s: record %zu (%s)", reader, k, gt_fact_name(b->type));
	cr_expect_eq(h->thread, b->thread, "%s: record %zu", reader, k);
	cr_expect_eq(cpu, b->cpu, "%s: record %zu", reader, k);
	cr_assert_eq(payload_len, b->payload_len, "%s: record %zu (%s)", reader, k,
		     gt_fact_name(b->type));
	uint8_t want[GT_MAX_RECORD_WORDS * 8];
	memcpy(want, image + b->off + sizeof(struct gt_rec), payload_len);
	if (renumbers && (b->type == GT_SYSCALL_BEGIN || b->type == GT_SYSCALL_END)) {
		/* the encoder's reader numbers calls as x86-64 does (encoder/syscalls.h) */
		uint32_t nr;
		memcpy(&nr, want, sizeof nr);
		nr = gt_syscall_canonical(GT_CB_ARCH, nr);
		memcpy(want, &nr, sizeof nr);
	}
	cr_expect_eq(memcmp(payload, want, payload_len), 0, "%s: record %zu (%s) payload", reader,
		     k, gt_fact_name(b->type));
	return k;
}

/* Per type: ROUNDS records; per CPU: the built order. */
static void check_complete(const char *reader, const size_t *order, size_t n)
{
	size_t per_type[GT_FACT_COUNT] = {0};
	size_t last[N_CPUS] = {0};
	bool any[N_CPUS] = {false};
	cr_assert_eq(n, n_built, "%s: %zu records of %zu", reader, n, n_built);
	for (size_t i = 0; i < n; i++) {
		const struct built *b = &built[order[i]];
		per_type[b->type]++;
		cr_expect(!any[b->cpu] || order[i] > last[b->cpu],
			  "%s: CPU %u's record %zu after %zu", reader, b->cpu, order[i],
			  last[b->cpu]);
		any[b->cpu] = true;
		last[b->cpu] = order[i];
	}
	for (unsigned t = 1; t < GT_FACT_COUNT; t++)
		cr_expect_eq(per_type[t], ROUNDS, "%s: %zu %s records", reader, per_type[t],
			     gt_fact_name(t));
}

Test(capture_format, both_readers_read_every_fact_alike)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/every_fact.cap", test_tmpdir());
	struct gt_cb *cb = build_all(path);
	size_t image_size;
	const uint8_t *image = gt_cb_image(cb, &image_size);
	static size_t real_order[ROUNDS * GT_FACT_COUNT], test_order[ROUNDS * GT_FACT_COUNT];
	static bool real_seen[ROUNDS * GT_FACT_COUNT], test_seen[ROUNDS * GT_FACT_COUNT];
	size_t n_real = 0;

	char err[256];
	struct gt_capture *real = gt_capture_open(path, err, sizeof err);
	cr_assert_not_null(real, "%s", err);
	struct gt_capture_record r;
	while (gt_capture_next(real, &r)) {
		cr_assert_lt(n_real, n_built, "the encoder's reader: more records than built");
		cr_expect_eq(r.tsc, r.rec->tsc, "the encoder's reader clamped a record");
		real_order[n_real++] = check_record(image, "the encoder's reader", true, r.rec, r.cpu,
						    r.payload, r.payload_len, real_seen);
	}
	struct gt_capture_stats st;
	gt_capture_stats(real, &st);
	gt_capture_close(real);
	cr_expect_eq(st.bytes_garbage + st.bytes_zero + st.reordered + st.torn_tails, 0,
		     "the encoder's reader found damage");
	check_complete("the encoder's reader", real_order, n_real);

	struct capture test;
	cr_assert_eq(capture_open(&test, path), 0);
	cr_expect_eq(test.bad_bytes, 0, "the test reader found damage");
	for (size_t i = 0; i < test.n && i < n_built; i++) {
		const struct cap_rec *c = &test.recs[i];
		test_order[i] = check_record(image, "the test reader", false, c->h, c->cpu, c->payload,
					     c->h->nwords * 8u - sizeof(struct gt_rec), test_seen);
	}
	check_complete("the test reader", test_order, test.n);
	capture_close(&test);

	/* Timestamps are unique, so both readers' merged orders must be the same. */
	for (size_t i = 0; i < n_real; i++)
		cr_expect_eq(real_order[i], test_order[i], "position %zu", i);
	gt_cb_free(cb);
}

/* A mutex wait's flags name the holder inside a condition wait's hook in 24 bits: past 2^24
 * threads they name none rather than the thread of the serial's low bits. */
Test(capture_format, a_cond_holder_past_2_24_threads_is_not_named)
{
	const uint32_t fits = (1u << 24) - 1, past = (1u << 24) + 5;
	cr_expect_eq(gt_block_cond_held(5) >> GT_BLOCK_HOLDER_SHIFT, 5u);
	cr_expect_eq(gt_block_cond_held(fits) >> GT_BLOCK_HOLDER_SHIFT, fits);
	cr_expect(gt_block_cond_held(fits) & GT_BLOCK_COND_HELD);
	cr_expect_eq(gt_block_cond_held(past), 0u, "names thread %u",
		     gt_block_cond_held(past) >> GT_BLOCK_HOLDER_SHIFT);
}
