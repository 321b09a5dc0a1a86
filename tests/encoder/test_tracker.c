/* The thread-and-wait tracker (encoder/tracker.c, its API in encoder/encoder.h): built captures read through the capture
 * reader in merged order, the tracker's answers asserted at cuts. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "test_util.h"
#include "encoder/encoder.h"
#include "encoder/syscalls.h"

#define T0 1000000ull
#define MUTEX 0x5000
#define PIPE_KEY (GT_OBJ_KERNEL | 0x1234)

static void path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s.cap", test_tmpdir(), name);
}

static void write_capture(struct gt_cb *cb, const char *name)
{
	char p[PATH_MAX];
	path_of(p, name);
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
}

/* The tracker fed every record of capture name up to cut (its tsc included). */
static struct gt_tracker *track_until(const char *name, uint64_t cut)
{
	char p[PATH_MAX], err[256];
	path_of(p, name);
	struct gt_capture *c = gt_capture_open(p, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	struct gt_tracker *tr = gt_tracker_new();
	cr_assert_not_null(tr);
	cr_assert(gt_tracker_capture_header(tr, 0, gt_capture_header(c)));
	struct gt_capture_record r;
	while (gt_capture_next(c, &r) && r.tsc <= cut)
		cr_assert(gt_tracker_fact(tr, &r, NULL));
	gt_capture_close(c);
	return tr;
}

static const struct gt_tracked_thread *thread(const struct gt_tracker *tr, uint32_t serial)
{
	const struct gt_tracked_thread *t = gt_tracker_thread(tr, 0, serial);
	cr_assert_not_null(t, "thread %u is known", serial);
	return t;
}

static size_t live_count(const struct gt_tracker *tr)
{
	size_t n = 0, pos = 0;
	while (gt_tracker_next_live(tr, &pos))
		n++;
	return n;
}

/* main (existing) creates worker 2, which blocks on a mutex main holds, is woken and takes it,
 * then reads a pipe until main writes to it; then worker 2 ends. */
static void build_mutex_and_pipe(const char *name)
{
	struct gt_cb *cb = gt_cb_new(2, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_name(cb, 0, T0 + 11, 1, "main");
	gt_cb_thread_new(cb, 0, T0 + 20, 1, 2, 7, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 30, 2, 4242, 0x401000);
	gt_cb_thread_name(cb, 1, T0 + 31, 2, "worker");
	gt_cb_block_begin(cb, 1, T0 + 100, 2, GT_BK_MUTEX, MUTEX, 3);
	gt_cb_wake(cb, 0, T0 + 200, 1, GT_BK_MUTEX, MUTEX, 1, 4);
	gt_cb_block_end(cb, 1, T0 + 210, 2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	struct {
		struct gt_p_syscall s;
		struct gt_p_syscall_obj o;
	} rd = {{SYS_read, 5, 9}, {PIPE_KEY}};
	gt_cb_record(cb, 1, GT_SYSCALL_BEGIN, GT_FD_PIPE, 2, T0 + 300, &rd, sizeof rd);
	gt_cb_syscall_begin(cb, 0, T0 + 350, 1, GT_FD_PIPE, SYS_write, 10, 0);
	gt_cb_syscall_end(cb, 0, T0 + 360, 1, SYS_write, 1);
	gt_cb_syscall_end(cb, 1, T0 + 400, 2, SYS_read, 1);
	gt_cb_yield(cb, 0, T0 + 450, 1, 0);
	gt_cb_thread_end(cb, 1, T0 + 500, 2);
	write_capture(cb, name);
}

Test(tracker, a_thread_blocked_on_a_mutex_since_its_begin_with_its_stack)
{
	build_mutex_and_pipe("mutex");
	struct gt_tracker *tr = track_until("mutex", T0 + 150);
	const struct gt_tracked_thread *w = thread(tr, 2);
	cr_expect_eq(w->doing, GT_DOING_BLOCKED);
	cr_expect(w->wait.open);
	cr_expect_not(w->wait.syscall);
	cr_expect_eq(w->wait.kind, GT_BK_MUTEX);
	cr_expect_eq(w->wait.obj, MUTEX);
	cr_expect_eq(w->wait.since_tsc, T0 + 100);
	cr_expect_eq(w->wait.stack, 3);
	cr_expect_eq(w->wait.cpu, 1);
	cr_expect_eq(w->raw_words, 4, "its BLOCK_BEGIN kept as read");
	cr_expect_eq(((const struct gt_rec *)w->raw)->type, GT_BLOCK_BEGIN);
	cr_expect_eq(w->tid, 4242);
	cr_expect_str_eq(w->name, "worker");
	cr_expect_eq(w->start_routine, 0x401000);
	cr_expect(w->announced && w->identified && !w->existing);
	cr_expect_eq(w->creator, 1);
	cr_expect_eq(w->create_stack, 7);
	cr_expect_eq(thread(tr, 1)->doing, GT_DOING_RUNNING);
	cr_expect(thread(tr, 1)->existing);
	cr_expect_eq(live_count(tr), 2);
	cr_expect_null(gt_tracker_object(tr, 0, MUTEX), "no fact tells a holder yet");
	gt_tracker_free(tr);

	/* woken and in: running, the holders as the facts give them */
	tr = track_until("mutex", T0 + 250);
	w = thread(tr, 2);
	cr_expect_eq(w->doing, GT_DOING_RUNNING);
	cr_expect_not(w->wait.open);
	cr_expect_eq(w->raw_words, 0);
	const struct gt_tracked_object *o = gt_tracker_object(tr, 0, MUTEX);
	cr_assert_not_null(o);
	cr_expect_eq(o->acquired_by, 2);
	cr_expect_eq(o->acquired_tsc, T0 + 210);
	cr_expect_eq(o->released_by, 1);
	cr_expect_eq(o->released_tsc, T0 + 200);
	cr_expect_null(gt_tracker_object(tr, 1, MUTEX), "another capture's object");
	gt_tracker_free(tr);
}

Test(tracker, a_thread_in_a_read_on_a_pipe)
{
	build_mutex_and_pipe("pipe");
	struct gt_tracker *tr = track_until("pipe", T0 + 355);
	const struct gt_tracked_thread *w = thread(tr, 2);
	cr_expect_eq(w->doing, GT_DOING_SYSCALL);
	cr_expect(w->wait.open && w->wait.syscall);
	cr_expect_eq(w->wait.nr, GT_SYS_read, "x86-64's number, whoever recorded it");
	cr_expect_eq(w->wait.kind, GT_FD_PIPE);
	cr_expect_eq(w->wait.arg, 9, "the descriptor");
	cr_expect_eq(w->wait.key, PIPE_KEY, "its kernel key");
	cr_expect_eq(w->wait.stack, 5);
	cr_expect_eq(w->wait.since_tsc, T0 + 300);
	cr_expect_eq(w->raw_words, 5);
	const struct gt_tracked_thread *m = thread(tr, 1);
	cr_expect_eq(m->doing, GT_DOING_SYSCALL, "main in its write");
	cr_expect_eq(m->wait.nr, GT_SYS_write);
	cr_expect_eq(m->wait.key, 0, "no kernel key given");
	gt_tracker_free(tr);

	tr = track_until("pipe", T0 + 455);
	cr_expect_eq(thread(tr, 2)->doing, GT_DOING_RUNNING);
	cr_expect_eq(thread(tr, 1)->doing, GT_DOING_RUNNABLE, "yielded");
	gt_tracker_free(tr);
}

Test(tracker, an_ended_thread_is_no_longer_live)
{
	build_mutex_and_pipe("ended");
	struct gt_tracker *tr = track_until("ended", UINT64_MAX);
	const struct gt_tracked_thread *w = thread(tr, 2);
	cr_expect_eq(w->life, GT_LIFE_ENDED);
	cr_expect(w->end_seen);
	cr_expect_eq(w->end_tsc, T0 + 500);
	cr_expect_eq(w->first_tsc, T0 + 30);
	cr_expect_eq(w->last_tsc, T0 + 500);
	cr_expect_not(gt_tracked_live(w));
	cr_expect_eq(live_count(tr), 1, "main only");
	size_t pos = 0;
	cr_expect_eq(gt_tracker_next_live(tr, &pos), thread(tr, 1));
	cr_expect_eq(gt_tracker_count(tr), 2);
	gt_tracker_capture_end(tr, 0);
	cr_expect_eq(live_count(tr), 0, "the capture's end ends its threads");
	cr_expect_not(thread(tr, 1)->end_seen, "not by a THREAD_END of their own");
	gt_tracker_free(tr);
}

/* A retired thread is forgotten but for its retirement: the threads held are the others, a
 * later fact of it makes nothing again, and the others' state is untouched. */
Test(tracker, a_retired_thread_is_forgotten_and_stays_so)
{
	build_mutex_and_pipe("retired");
	struct gt_tracker *tr = track_until("retired", T0 + 500);
	cr_assert_eq(thread(tr, 2)->life, GT_LIFE_ENDED);
	cr_expect_not(gt_tracker_retired(tr, 0, 2));
	cr_assert(gt_tracker_retire(tr, 0, 2));
	cr_expect(gt_tracker_retired(tr, 0, 2));
	cr_expect_not(gt_tracker_retired(tr, 0, 1));
	cr_expect_not(gt_tracker_retired(tr, 1, 2), "another capture's serial 2");
	cr_expect_null(gt_tracker_thread(tr, 0, 2));
	cr_expect_not(gt_tracker_retire(tr, 0, 2), "not held any more");
	cr_expect_eq(gt_tracker_count(tr), 1);
	cr_expect_eq(thread(tr, 1)->serial, 1u);
	/* a fact of the retired thread (a damaged capture's): nothing is made of it */
	struct gt_rec rec = {.type = GT_YIELD, .nwords = 2, .thread = 2};
	struct gt_p_stackonly p = {0};
	struct gt_capture_record r = {.rec = &rec, .payload = &p, .payload_len = sizeof p,
				      .tsc = T0 + 600};
	struct gt_tracker_change change;
	cr_expect(gt_tracker_fact(tr, &r, &change));
	cr_expect_null(change.thread);
	cr_expect_null(gt_tracker_thread(tr, 0, 2));
	cr_expect_eq(gt_tracker_count(tr), 1);
	gt_tracker_free(tr);
}

/* The threads held stay in the order met however many are retired (a --from window gives
 * the live ones to the model in that order), and each is still found where it is. */
Test(tracker, retiring_keeps_the_order_met)
{
	struct gt_tracker *tr = gt_tracker_new();
	cr_assert_not_null(tr);
	const uint32_t n = 40;
	for (uint32_t serial = 1; serial <= n; serial++) {
		struct gt_rec rec = {.type = GT_YIELD, .nwords = 2, .thread = serial};
		struct gt_p_stackonly p = {0};
		struct gt_capture_record r = {.rec = &rec, .payload = &p, .payload_len = sizeof p,
					      .tsc = T0 + serial};
		cr_assert(gt_tracker_fact(tr, &r, NULL));
	}
	/* every third one, early ones first: holes, then the places closed up */
	for (uint32_t serial = 1; serial <= n; serial += 3)
		cr_assert(gt_tracker_retire(tr, 0, serial));
	for (uint32_t serial = 2; serial <= n / 2; serial += 3)
		cr_assert(gt_tracker_retire(tr, 0, serial));
	size_t pos = 0, held = 0;
	uint32_t last = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next(tr, &pos)); held++) {
		cr_expect_gt(t->serial, last, "serial %u after %u", t->serial, last);
		cr_expect_eq(gt_tracker_thread(tr, 0, t->serial), t);
		last = t->serial;
	}
	cr_expect_eq(held, gt_tracker_count(tr));
	cr_expect_eq(held, n - 14u - 7u, "%zu held", held);
	gt_tracker_free(tr);
}

/* Threads inherit the header's comm (the executable's base name) until the first
 * GT_PROCESS_NAME that names one; a later one renames the process, not what they inherit. */
Test(tracker, a_name_equal_to_the_inherited_comm_is_not_a_threads_own)
{
	struct gt_cb *cb = gt_cb_new(1, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_name(cb, 0, T0 + 11, 1, "test-program");
	gt_cb_process_name(cb, 0, T0 + 20, GT_NAME_START, "srv", "srv", 4);
	gt_cb_thread_name(cb, 0, T0 + 21, 1, "srv");
	gt_cb_process_name(cb, 0, T0 + 30, GT_NAME_THREAD, "renamed", "renamed", 8);
	gt_cb_thread_name(cb, 0, T0 + 31, 1, "test-program");
	write_capture(cb, "inherit");

	struct gt_tracker *tr = track_until("inherit", T0 + 11);
	cr_expect_str_eq(gt_tracker_inherited_name(tr, 0), "test-program", "the header's");
	cr_expect_null(gt_tracker_own_name(tr, 0, thread(tr, 1)->name));
	cr_expect_str_eq(gt_tracker_own_name(tr, 0, "worker"), "worker");
	cr_expect_null(gt_tracker_own_name(tr, 0, ""), "no name is no own name");
	cr_expect_str_eq(gt_tracker_inherited_name(tr, 1), "", "a capture not given");
	gt_tracker_free(tr);

	tr = track_until("inherit", T0 + 21);
	cr_expect_str_eq(gt_tracker_inherited_name(tr, 0), "srv", "the first GT_PROCESS_NAME's");
	cr_expect_null(gt_tracker_own_name(tr, 0, thread(tr, 1)->name));
	gt_tracker_free(tr);

	tr = track_until("inherit", UINT64_MAX);
	cr_expect_str_eq(gt_tracker_inherited_name(tr, 0), "srv", "not a later one's");
	cr_expect_str_eq(gt_tracker_own_name(tr, 0, thread(tr, 1)->name), "test-program");
	gt_tracker_free(tr);
}

/* What each fact closes: its end, a THREAD_END; a begin inside the open wait (a signal
 * handler's call) and its end close nothing. */
Test(tracker, the_change_names_the_wait_a_fact_closed)
{
	struct gt_cb *cb = gt_cb_new(1, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 1, 0);
	gt_cb_block_begin(cb, 0, T0 + 20, 1, GT_BK_COND, 0x6000, 2);
	gt_cb_block_begin(cb, 0, T0 + 30, 1, GT_BK_SLEEP, 1000, 0);    /* a handler's, nested */
	gt_cb_block_end(cb, 0, T0 + 32, 1, GT_BK_SLEEP, 1000, 0);      /* its end */
	gt_cb_syscall_end(cb, 0, T0 + 35, 1, SYS_read, 0);             /* not the open wait's */
	gt_cb_thread_end(cb, 0, T0 + 40, 1);
	write_capture(cb, "change");
	char p[PATH_MAX], err[256];
	path_of(p, "change");
	struct gt_capture *c = gt_capture_open(p, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	struct gt_tracker *tr = gt_tracker_new();
	struct gt_capture_record r;
	struct gt_tracker_change ch;
	cr_assert(gt_capture_next(c, &r));
	cr_assert(gt_tracker_fact(tr, &r, &ch));
	cr_expect(ch.thread && ch.thread->blocked_at_start, "EXISTING said it was blocked");
	cr_expect_not(ch.closed);
	cr_assert(gt_capture_next(c, &r));
	cr_assert(gt_tracker_fact(tr, &r, &ch));
	cr_expect_not(ch.thread->blocked_at_start, "a fact since");
	cr_expect_not(ch.closed);
	cr_assert(gt_capture_next(c, &r));
	cr_assert(gt_tracker_fact(tr, &r, &ch));
	cr_expect(ch.nested && !ch.closed, "a begin inside the open wait is nested in it");
	cr_assert(gt_capture_next(c, &r));
	cr_assert(gt_tracker_fact(tr, &r, &ch));
	cr_expect(ch.nested && !ch.closed, "the nested call's end closes nothing");
	cr_expect_eq(ch.thread->wait.kind, GT_BK_COND, "the open wait is the cond's");
	cr_expect_eq(ch.thread->wait.since_tsc, T0 + 20);
	cr_assert(gt_capture_next(c, &r));
	cr_assert(gt_tracker_fact(tr, &r, &ch));
	cr_expect_not(ch.closed, "a syscall's end does not close a block");
	cr_expect_eq(ch.thread->doing, GT_DOING_BLOCKED);
	cr_assert(gt_capture_next(c, &r));
	cr_assert(gt_tracker_fact(tr, &r, &ch));
	cr_expect(ch.closed, "THREAD_END closes it");
	cr_expect_eq(ch.closed_wait.kind, GT_BK_COND);
	cr_expect_eq(ch.thread->life, GT_LIFE_ENDED);
	gt_tracker_free(tr);
	gt_capture_close(c);
}

/* A flight recorder's ring (as in test_reader.c): the reader's summary, built by the tracker
 * from what the keep chunks and CPU chunks hold, read by another tracker, gives the state at
 * the window's start: worker 2 blocked on the mutex with its name and start routine, thread 3
 * ended before it (not there), main running. */
Test(tracker, a_ring_window_starts_in_the_state_the_tracker_rebuilt)
{
	const uint64_t lost = T0 + 1000;
	struct gt_cb *cb = gt_cb_new(2, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);                     /* chunk 0: keep */
	gt_cb_thread_new(cb, 0, T0 + 20, 1, 2, 7, 0x401000);
	gt_cb_thread_name(cb, 0, T0 + 22, 2, "waiter");
	gt_cb_block_begin(cb, 0, T0 + 40, 2, GT_BK_MUTEX, MUTEX, 6);
	gt_cb_thread_new(cb, 0, T0 + 50, 1, 3, 0, 0x402000);
	gt_cb_thread_end(cb, 0, T0 + 60, 3);
	gt_cb_thread_start(cb, 1, T0 + 30, 2, 99, 0x401000);                 /* chunk 1: CPU 1 */
	gt_cb_wake(cb, 1, lost + 100, 1, GT_BK_MUTEX, MUTEX, 1, 0);          /* the window */
	gt_cb_block_end(cb, 1, lost + 200, 2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_capture_end(cb, 1, lost + 300);
	struct gt_file_header *h = gt_cb_header(cb);
	h->flags |= GT_FILE_RING;
	h->ring_bytes = 8192;
	h->ring_lost_tsc = lost;
	size_t size;
	struct gt_chunk_header *keep = (struct gt_chunk_header *)(gt_cb_image(cb, &size) + GT_FILE_HEADER_SIZE);
	keep->magic = GT_KEEP_MAGIC;
	write_capture(cb, "ring");

	struct gt_tracker *tr = track_until("ring", lost);
	const struct gt_tracked_thread *w = thread(tr, 2);
	cr_expect(gt_tracked_live(w));
	cr_expect(w->existing, "there before the window");
	cr_expect_eq(w->doing, GT_DOING_BLOCKED);
	cr_expect_eq(w->wait.obj, MUTEX);
	cr_expect_eq(w->wait.stack, 6);
	cr_expect_eq(w->wait.since_tsc, lost, "stamped at the window's start");
	cr_expect_str_eq(w->name, "waiter");
	cr_expect_eq(w->start_routine, 0x401000);
	cr_expect_eq(w->tid, 99);
	cr_expect_eq(w->identity_stack, 7, "the creator's stack");
	cr_expect_null(gt_tracker_thread(tr, 0, 3), "ended before the window: not in it");
	cr_expect_eq(thread(tr, 1)->doing, GT_DOING_RUNNING);
	cr_expect_eq(live_count(tr), 2);
	gt_tracker_free(tr);

	tr = track_until("ring", lost + 250);
	cr_expect_eq(thread(tr, 2)->doing, GT_DOING_RUNNING, "the wake in the window ends it");
	gt_tracker_free(tr);
	tr = track_until("ring", UINT64_MAX);
	cr_expect_eq(live_count(tr), 0, "the capture ended");
	gt_tracker_free(tr);
}

/* A lock wait naming its holder by tid (GT_BLOCK_HOLDER_TID, as the hooks read it from the
 * lock) into thread serial t's BLOCK_BEGIN. */
static void block_held_by(struct gt_cb *cb, uint32_t cpu, uint64_t tsc, uint32_t t, uint64_t obj,
			  uint32_t stack, int holder_tid)
{
	struct gt_p_block b = {.obj = obj, .stack = stack, .flags = gt_block_holder_tid(holder_tid)};
	gt_cb_record(cb, cpu, GT_BLOCK_BEGIN, GT_BK_MUTEX, t, tsc, &b, sizeof b);
}

#define LOCK_A 0xa000
#define LOCK_B 0xb000
#define LOCK_C 0xc000

/* alpha (2, tid 200) and beta (3, tid 300) each hold a lock the other one waits for; thread 4
 * (tid 400) ends and thread 5 is given its tid, which main's wait on C then names; thread 5
 * releases C. */
static void build_deadlock(const char *name)
{
	struct gt_cb *cb = gt_cb_new(2, 8192, T0);
	gt_cb_thread_start(cb, 0, T0 + 1, 1, 100, 0);
	gt_cb_thread_start(cb, 0, T0 + 2, 2, 200, 0x401000);
	gt_cb_thread_name(cb, 0, T0 + 3, 2, "alpha");
	gt_cb_thread_start(cb, 1, T0 + 4, 3, 300, 0x401000);
	gt_cb_thread_name(cb, 1, T0 + 5, 3, "beta");
	gt_cb_thread_start(cb, 1, T0 + 10, 4, 400, 0x401000);
	gt_cb_thread_end(cb, 1, T0 + 50, 4);
	gt_cb_thread_start(cb, 1, T0 + 60, 5, 400, 0x401000);
	block_held_by(cb, 0, T0 + 100, 2, LOCK_B, 7, 300);
	block_held_by(cb, 1, T0 + 110, 3, LOCK_A, 8, 200);
	block_held_by(cb, 0, T0 + 130, 1, LOCK_C, 9, 400);
	gt_cb_wake(cb, 1, T0 + 140, 5, GT_BK_MUTEX, LOCK_C, 1, 10);
	write_capture(cb, name);
}

Test(tracker, holders_named_by_tid_make_the_wait_for_graph_and_its_deadlock)
{
	build_deadlock("deadlock");
	struct gt_tracker *tr = track_until("deadlock", T0 + 135);
	const struct gt_tracked_thread *alpha = thread(tr, 2), *beta = thread(tr, 3);
	cr_expect_eq(alpha->wait.holder, 3);
	cr_expect_eq(alpha->wait.holder_tid, 300);
	const struct gt_tracked_object *o;
	uint32_t tid;
	cr_expect_eq(gt_tracker_waits_for(tr, alpha, &o, &tid), beta);
	cr_expect(o && o->obj == LOCK_B && tid == 300);
	cr_expect_eq(gt_tracker_waits_for(tr, beta, &o, &tid), alpha);
	/* the tid of the thread that ended names the one given it since */
	cr_expect_eq(thread(tr, 1)->wait.holder, 5, "tid 400 is thread 5's now");
	cr_expect_eq(gt_tracker_waits_for(tr, thread(tr, 1), &o, &tid), thread(tr, 5));

	const struct gt_tracked_thread *cycle[GT_CYCLE_MAX];
	bool lead;
	cr_assert_eq(gt_tracker_deadlock(tr, alpha, cycle, &lead), 2);
	cr_expect(cycle[0] == alpha && cycle[1] == beta && lead);
	cr_assert_eq(gt_tracker_deadlock(tr, beta, cycle, &lead), 2);
	cr_expect_not(lead, "told once, from the thread met first");
	cr_expect_eq(gt_tracker_deadlock(tr, thread(tr, 1), cycle, &lead), 0,
		     "main waits for a thread that is on no cycle");
	char text[512] = "";
	cr_expect_eq(gt_tracker_deadlock_text(tr, 0, text, sizeof text, NULL, NULL), 1);
	cr_expect_str_eq(text, "2 threads, each waiting for a lock the next one holds\n"
			       "  alpha (thread 2) waits for mutex 0xb000 held by beta (thread 3)\n"
			       "  beta (thread 3) waits for mutex 0xa000 held by alpha (thread 2)");
	/* appended to what the buffer holds, cut with "..." where it is full */
	char small[72] = "earlier";
	cr_expect_eq(gt_tracker_deadlock_text(tr, 0, small, sizeof small, NULL, NULL), 1);
	cr_expect_str_eq(small, "earlier\n2 threads, each waiting for a lock the next one holds\n"
				"  alph...");
	cr_expect_eq(gt_tracker_deadlock_text(tr, 0, small, sizeof small, NULL, NULL), 1, "full: counted");
	cr_expect_eq(strlen(small), sizeof small - 1);
	gt_tracker_free(tr);

	/* C released by its holder: main waits for nobody known */
	tr = track_until("deadlock", T0 + 140);
	cr_expect_null(gt_tracker_waits_for(tr, thread(tr, 1), &o, &tid));
	cr_expect(o && o->released_by == 5 && o->released_stack == 10 && o->holder == 0);
	gt_tracker_free(tr);
}

static void lock_rec(struct gt_cb *cb, uint64_t tsc, uint32_t thread, uint8_t type, uint8_t kind,
		     uint64_t obj, uint32_t stack, uint32_t flags)
{
	struct gt_p_lock p = {.obj = obj, .stack = stack, .flags = flags};
	gt_cb_record(cb, 0, type, kind, thread, tsc, &p, sizeof p);
}

/* The lock records of --locks=all: thread 1 takes A (stack 5), then recursive B twice, then
 * releases B twice and A; a release of a lock never taken is unmatched. */
Test(tracker, lock_records_make_holds_in_the_order_taken)
{
	const uint64_t A = 0x5000, B = 0x6000;
	struct gt_cb *cb = gt_cb_new(1, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 100, 0);
	lock_rec(cb, T0 + 100, 1, GT_LOCK_ACQUIRE, GT_BK_MUTEX, A, 5, 0);
	lock_rec(cb, T0 + 110, 1, GT_LOCK_ACQUIRE, GT_BK_MUTEX, B, 6, GT_LOCK_WAITED);
	lock_rec(cb, T0 + 120, 1, GT_LOCK_ACQUIRE, GT_BK_MUTEX, B, 7, GT_LOCK_TRY);
	lock_rec(cb, T0 + 130, 1, GT_LOCK_RELEASE, GT_BK_MUTEX, B, 0, 0);
	lock_rec(cb, T0 + 140, 1, GT_LOCK_RELEASE, GT_BK_MUTEX, B, 0, 0);
	lock_rec(cb, T0 + 150, 1, GT_LOCK_RELEASE, GT_BK_MUTEX, A, 0, 0);
	lock_rec(cb, T0 + 160, 1, GT_LOCK_RELEASE, GT_BK_MUTEX, A, 0, 0);
	write_capture(cb, "locks");

	char p[PATH_MAX], err[256];
	path_of(p, "locks");
	struct gt_capture *c = gt_capture_open(p, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	struct gt_tracker *tr = gt_tracker_new();
	struct gt_capture_record r;
	struct gt_tracker_change ch;
	struct {
		bool began, ended, unmatched;
		uint64_t obj;
		uint32_t depth, stack;
		size_t n_held;
	} want[] = {
		{0}, /* THREAD_EXISTING */
		{true, false, false, A, 1, 5, 1},
		{true, false, false, B, 1, 6, 2},
		{false, false, false, B, 2, 6, 2},
		{false, false, false, B, 1, 6, 2},
		{false, true, false, B, 0, 6, 1},
		{false, true, false, A, 0, 5, 0},
		{false, false, true, 0, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		cr_assert(gt_capture_next(c, &r), "record %zu", i);
		cr_assert(gt_tracker_fact(tr, &r, &ch));
		cr_assert_eq(ch.hold_began, want[i].began, "record %zu", i);
		cr_assert_eq(ch.hold_ended, want[i].ended, "record %zu", i);
		cr_assert_eq(ch.release_unmatched, want[i].unmatched, "record %zu", i);
		cr_assert_eq(ch.thread->n_held, want[i].n_held, "record %zu", i);
		if (!i || want[i].unmatched)
			continue;
		cr_assert_eq(ch.hold.obj, want[i].obj, "record %zu", i);
		cr_assert_eq(ch.hold.depth, want[i].depth, "record %zu", i);
		cr_assert_eq(ch.hold.stack, want[i].stack, "record %zu", i);
		if (i == 2) {   /* A was held as B was taken */
			cr_assert_eq(ch.thread->held[0].obj, A);
			cr_assert_eq(ch.thread->held[1].flags, GT_LOCK_WAITED);
			const struct gt_tracked_object *o = gt_tracker_object(tr, 0, B);
			cr_assert(o && o->holder == 1 && o->held_stack == 6 && o->held_tsc == T0 + 110);
		}
		if (i == 5)
			cr_assert_eq(ch.hold.since_tsc, T0 + 110);
	}
	const struct gt_tracked_object *o = gt_tracker_object(tr, 0, A);
	cr_assert(o && o->holder == 0, "A has no holder once released");
	gt_capture_close(c);
	gt_tracker_free(tr);
}

/* A live process's waits (gotrace stacks) in the same graph: an AB/BA deadlock between
 * tids 101 and 102, main (100) joining 101, a condition waiter, and two threads joining each
 * other; the holders named by tid, as the lock words tell them. */
Test(tracker, live_waits_make_the_wait_for_graph_with_joins)
{
	const struct gt_live_wait w[] = {
		{.tid = 100, .kind = GT_BK_JOIN, .holder_tid = 101},
		{.tid = 101, .kind = GT_BK_MUTEX, .obj = 0xa000, .holder_tid = 102},
		{.tid = 102, .kind = GT_BK_MUTEX, .obj = 0xb000, .holder_tid = 101},
		{.tid = 103, .kind = GT_BK_COND, .obj = 0xc000},
		{.tid = 104, .kind = GT_BK_JOIN, .holder_tid = 105},
		{.tid = 105, .kind = GT_BK_JOIN, .holder_tid = 104},
		{.tid = 106},
	};
	struct gt_tracker *tr = gt_tracker_of_live_waits(w, sizeof w / sizeof w[0]);
	cr_assert_not_null(tr);
	cr_expect_eq(gt_tracker_count(tr), 7);
	const struct gt_tracked_object *o;
	uint32_t tid;
	cr_expect_eq(gt_tracker_waits_for(tr, thread(tr, 1), &o, &tid), thread(tr, 2));
	cr_expect(o == NULL && tid == 101, "a join waits for the joined thread");
	cr_expect_eq(gt_tracker_waits_for(tr, thread(tr, 2), &o, &tid), thread(tr, 3));
	cr_expect(o && o->obj == 0xa000 && tid == 102);
	cr_expect_null(gt_tracker_waits_for(tr, thread(tr, 4), &o, &tid));
	cr_expect_eq(tid, 0, "a condition waiter waits for no thread known");
	cr_expect_null(gt_tracker_waits_for(tr, thread(tr, 7), &o, &tid));
	cr_expect_eq(thread(tr, 7)->doing, GT_DOING_RUNNING);

	const struct gt_tracked_thread *cycle[GT_CYCLE_MAX];
	bool lead;
	cr_expect_eq(gt_tracker_deadlock(tr, thread(tr, 1), cycle, &lead), 0,
		     "main joins a thread of a cycle, it is on none");
	cr_assert_eq(gt_tracker_deadlock(tr, thread(tr, 2), cycle, &lead), 2);
	cr_expect(cycle[0] == thread(tr, 2) && cycle[1] == thread(tr, 3) && lead);
	cr_assert_eq(gt_tracker_deadlock(tr, thread(tr, 6), cycle, &lead), 2);
	cr_expect(cycle[0] == thread(tr, 6) && cycle[1] == thread(tr, 5) && !lead);
	char text[512] = "";
	cr_expect_eq(gt_tracker_deadlock_text(tr, 0, text, sizeof text, NULL, NULL), 2);
	cr_expect_str_eq(text, "2 threads, each waiting for a lock the next one holds\n"
			       "  thread 2 waits for mutex 0xa000 held by thread 3\n"
			       "  thread 3 waits for mutex 0xb000 held by thread 2\n"
			       "2 threads, each waiting for the next one\n"
			       "  thread 5 waits for thread 6 to end\n"
			       "  thread 6 waits for thread 5 to end");
	gt_tracker_free(tr);
}
