/* gt-stack SCENARIO: how much of the program's stack the hooks use.
 *
 *   measure [ROUNDS]
 *              a thread whose stack is painted with a pattern calls each kind of hook (one
 *              at a time, each at the same depth, ROUNDS times, default 4) and finds the
 *              deepest byte it touched: stderr "stackuse OP BYTES" (traced and untraced
 *              differ by the tracer's use; stdout, identical, says each operation completed);
 *              exec and posix_spawn of a missing program, dlopen; exit and _exit in fork
 *              children, on a thread whose stack the parent shares and reads afterwards
 *   altstack   SIGUSR1's handler runs on a malloc'd 8 KiB alternate stack (the classic
 *              SIGSTKSZ) and writes, sleeps and takes a contended lock, under a stream of
 *              signals; the 4 KiB below the stack are a canary: stderr "altstack BYTES"
 *   altnest    SIGUSR1 and SIGUSR2 handlers on one alternate stack, each able to interrupt
 *              the other, under two streams of signals: nested handlers must not overwrite
 *              each other
 *   recurse    a thread with a 16 KiB stack recurses, calling write() at every level, until
 *              it hits its guard page: stderr "recurse FRAME_BYTES DEPTH"
 *
 * Waits are on the events themselves (pipes, lock and semaphore words), never on time. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PAINT 0xa5a5a5a5a5a5a5a5ull

static int devnull;

static void die(const char *what)
{
	perror(what);
	exit(2);
}

/* a yield the tracer does not record: spinning on a lock word must not flood the capture */
static void relax(void) { syscall(SYS_sched_yield); }

/* glibc's words: a mutex with waiters holds 2; a semaphore counts its waiters in the high half */
static int mutex_word(pthread_mutex_t *m) { return atomic_load((_Atomic int *)&m->__data.__lock); }
static uint64_t sem_waiters(sem_t *s) { return atomic_load((_Atomic uint64_t *)s) >> 32; }

/* ---- measure ------------------------------------------------------------------------------ */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t s;
static atomic_int ready, go;
static char *stack_lo;

/* The helper thread does the other half of an operation: told by a byte on a pipe, it
 * answers one byte when it is in place and one when it is done. */
static int to_helper[2], from_helper[2];

static void tell_helper(char cmd)
{
	char ack;
	if (write(to_helper[1], &cmd, 1) != 1 || read(from_helper[0], &ack, 1) != 1)
		die("helper");
}

static void helper_done(void)
{
	char ack;
	if (read(from_helper[0], &ack, 1) != 1)
		die("helper");
}

static void *helper(void *arg)
{
	(void)arg;
	char cmd;
	for (; read(to_helper[0], &cmd, 1) == 1 && cmd != 'q'; write(from_helper[1], "d", 1)) {
		switch (cmd) {
		case 'h': /* hold m until someone waits for it */
			pthread_mutex_lock(&m);
			if (write(from_helper[1], &cmd, 1) != 1)
				die("ack");
			while (mutex_word(&m) != 2)
				relax();
			pthread_mutex_unlock(&m);
			continue;
		case 'l': /* wait for m (held by the measurer) */
			if (write(from_helper[1], &cmd, 1) != 1)
				die("ack");
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
			continue;
		case 'c': /* signal c once the measurer waits on it (it set ready holding m) */
			if (write(from_helper[1], &cmd, 1) != 1)
				die("ack");
			while (!atomic_load(&ready))
				relax();
			pthread_mutex_lock(&m); /* free only once the measurer is in the wait */
			atomic_store(&go, 1);
			pthread_cond_signal(&c);
			pthread_mutex_unlock(&m);
			continue;
		case 'w': /* wait on c until the measurer signals */
			pthread_mutex_lock(&m);
			atomic_store(&ready, 1);
			if (write(from_helper[1], &cmd, 1) != 1)
				die("ack");
			while (!atomic_load(&go))
				pthread_cond_wait(&c, &m);
			pthread_mutex_unlock(&m);
			continue;
		case 'p': /* post s once the measurer waits on it */
			if (write(from_helper[1], &cmd, 1) != 1)
				die("ack");
			while (!sem_waiters(&s))
				relax();
			sem_post(&s);
			continue;
		case 's': /* wait on s until the measurer posts */
			if (write(from_helper[1], &cmd, 1) != 1)
				die("ack");
			sem_wait(&s);
			continue;
		}
	}
	return NULL;
}

static void *nothing(void *arg) { return arg; }

static void op_mutex(void)
{
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
}

static void op_mutex_contended(void) { op_mutex(); } /* the helper holds m */

static void op_unlock_waited(void) { pthread_mutex_unlock(&m); } /* the helper waits for m */

static void op_cond_wait(void)
{
	pthread_mutex_lock(&m);
	atomic_store(&ready, 1);
	while (!atomic_load(&go))
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
}

static void op_cond_signal(void)
{
	pthread_mutex_lock(&m); /* free only once the helper is in its wait */
	atomic_store(&go, 1);
	pthread_cond_signal(&c);
	pthread_mutex_unlock(&m);
}

static void op_sem_wait(void) { sem_wait(&s); }  /* the helper posts once it sees a waiter */
static void op_sem_post(void) { sem_post(&s); }  /* the helper waits */
static void op_write(void) { write(devnull, "x", 1); }

static void op_nanosleep(void)
{
	struct timespec ts = {0, 1000};
	nanosleep(&ts, NULL);
}

static void op_create(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, nothing, NULL) == 0)
		pthread_join(th, NULL);
}

/* exec and spawn of a program that does not exist: the hooks do all their work */
static char *const no_argv[] = {(char *)"gt-stack-none", NULL};
#define NO_PROGRAM "/nonexistent/gt-stack-none"

static void op_exec(void) { execve(NO_PROGRAM, no_argv, environ); }

static void op_spawn(void)
{
	pid_t pid;
	if (posix_spawn(&pid, NO_PROGRAM, NULL, NULL, no_argv, environ) == 0)
		waitpid(pid, NULL, 0); /* glibc says ENOENT: no child left */
}

static void op_dlopen(void)
{
	void *h = dlopen(NULL, RTLD_NOW);
	if (h)
		dlclose(h);
}

/* through pointers bound at load: a fork child's first call through the PLT would bind
 * lazily, whose resolver saves the vector registers on the stack (kilobytes) */
static void (*volatile exit_fn)(int) = exit;
static void (*volatile _exit_fn)(int) = _exit;
static void op_exit(void) { exit_fn(0); }
static void op__exit(void) { _exit_fn(0); }

/* Paints the stack from lo up to below the caller's frame; returns where the paint ends */
static inline __attribute__((always_inline)) uint64_t *paint(char *lo)
{
	uintptr_t sp;
#if defined(__aarch64__)
	__asm__ volatile("mov %0, sp" : "=r"(sp));
#else
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#endif
	uint64_t *top = (uint64_t *)((sp & ~(uintptr_t)7) - 8); /* the call's return address */
	for (volatile uint64_t *p = (volatile uint64_t *)lo; p < top; p++)
		*p = PAINT;
	return top;
}

/* how deep below top the paint above lo was overwritten */
static size_t painted_depth(const char *lo, const uint64_t *top)
{
	const volatile uint64_t *p = (const volatile uint64_t *)lo;
	while (p < top && *p == PAINT)
		p++;
	return (size_t)((const char *)top - (const char *)p);
}

/* Paints the stack below this frame, runs op, returns how deep below the painted top op
 * wrote.  noinline, called from one place: every op starts at the same depth. */
static __attribute__((noinline)) size_t painted_run(void (*op)(void))
{
	uint64_t *top = paint(stack_lo);
	op();
	return painted_depth(stack_lo, top);
}

/* exit and _exit end the process: run in a fork child by a thread on a stack the parent
 * shares (MAP_SHARED), which the parent reads once the child is gone */
#define EXIT_STACK (64 << 10)
static char *exit_lo; /* EXIT_STACK of stack, then where its paint ends */
static void (*exit_op)(void);

static __attribute__((noinline)) void painted_exit(void)
{
	*(uint64_t **)(exit_lo + EXIT_STACK) = paint(exit_lo);
	exit_op();
}

static void *exit_thread(void *arg)
{
	painted_exit();
	return arg;
}

static size_t measure_exit(void (*op)(void))
{
	exit_op = op;
	pid_t pid = fork();
	if (pid == 0) {
		pthread_attr_t a;
		pthread_t t;
		pthread_attr_init(&a);
		pthread_attr_setstack(&a, exit_lo, EXIT_STACK);
		if (pthread_create(&t, &a, exit_thread, NULL) == 0)
			pthread_join(t, NULL);
		_exit(3);
	}
	int st = -1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("exit child");
	return painted_depth(exit_lo, *(uint64_t **)(exit_lo + EXIT_STACK));
}

struct op {
	const char *name;
	char before;   /* helper command, 0: none, 'X': the op ends a fork child */
	void (*run)(void);
};

static const struct op ops[] = {
	{"mutex", 0, op_mutex},
	{"mutex-contended", 'h', op_mutex_contended},
	{"mutex-unlock-waited", 'l', op_unlock_waited},
	{"cond-wait", 'c', op_cond_wait},
	{"cond-signal", 'w', op_cond_signal},
	{"sem-wait", 'p', op_sem_wait},
	{"sem-post", 's', op_sem_post},
	{"write", 0, op_write},
	{"nanosleep", 0, op_nanosleep},
	{"pthread-create", 0, op_create},
	{"exec", 0, op_exec},
	{"posix-spawn", 0, op_spawn},
	{"dlopen", 0, op_dlopen},
	{"exit", 'X', op_exit},
	{"_exit", 'X', op__exit},
};

static void *measurer(void *arg)
{
	int rounds = (int)(intptr_t)arg;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		const struct op *o = &ops[i];
		size_t most = 0;
		/* the first round binds the program's calls (lazy PLT): measured from the second */
		for (int round = 0; round < rounds; round++) {
			atomic_store(&ready, 0);
			atomic_store(&go, 0);
			if (o->before == 'l') {
				pthread_mutex_lock(&m);
				tell_helper('l');
				while (mutex_word(&m) != 2)
					relax();
			} else if (o->before == 'w') {
				tell_helper('w');
			} else if (o->before == 's') {
				tell_helper('s');
				while (!sem_waiters(&s))
					relax();
			} else if (o->before == 'X') {
				size_t used = measure_exit(o->run);
				if (round && used > most)
					most = used;
				continue;
			} else if (o->before) {
				tell_helper(o->before);
			}
			size_t used = painted_run(o->run);
			if (o->before)
				helper_done();
			if (round && used > most)
				most = used;
		}
		printf("%s done\n", o->name);
		fprintf(stderr, "stackuse %s %zu\n", o->name, most);
	}
	return NULL;
}

static int s_measure(int rounds)
{
	const size_t size = 64 << 10;
	stack_lo = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	exit_lo = mmap(NULL, EXIT_STACK + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (stack_lo == MAP_FAILED || exit_lo == MAP_FAILED)
		die("mmap");
	if (pipe(to_helper) || pipe(from_helper) || sem_init(&s, 0, 0))
		die("setup");
	pthread_t h, t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstack(&a, stack_lo, size);
	fprintf(stderr, "fn painted_run %lu\nfd devnull %d\n", (unsigned long)(uintptr_t)painted_run,
		devnull);
	if (pthread_create(&h, NULL, helper, NULL) || pthread_create(&t, &a, measurer, (void *)(intptr_t)rounds))
		die("pthread_create");
	pthread_join(t, NULL);
	if (write(to_helper[1], "q", 1) != 1)
		die("quit");
	pthread_join(h, NULL);
	return 0;
}

/* ---- alternate signal stacks ---------------------------------------------------------- */

#define ALT_BYTES 8192   /* SIGSTKSZ before glibc 2.34 */
#define CANARY 4096
#define SIGNALS 1000

static pthread_mutex_t hm = PTHREAD_MUTEX_INITIALIZER;
static int acks[2];      /* the SIGUSR1 handler writes a byte, the sender reads it */
static int lockreq[2];   /* the handler asks hm_holder to let it have hm ("q": stop) */
static int lockheld[2];  /* hm_holder holds hm: the handler's lock will wait */
static int locktaken[2]; /* the handler had it */
static int senderdone[2];
static atomic_int sender_done;
static pthread_t target;
static int signals;      /* SIGUSR1s sent */
static int handler_depth; /* frames below the SIGUSR1 handler before its writes */
static atomic_ulong invocations;
static atomic_int frames_overwritten, in_handler, nested;
static timer_t timer;
static const struct itimerspec once = {{0, 0}, {0, 200000}};

static __attribute__((noinline)) void deep_writes(int depth)
{
	if (depth > 1) {
		deep_writes(depth - 1);
		__asm__ volatile("" ::: "memory"); /* not a tail call */
		return;
	}
	for (int i = 0; i < 20; i++)
		write(devnull, "h", 1);
}

/* SIGUSR1 from the sender; SIGUSR2 from a timer (altnest), which may interrupt it */
static void handler(int sig)
{
	int e = errno;
	struct timespec ts = {0, 1000};
	/* a nested handler put over this one's frame would change these */
	volatile unsigned long mine[16];
	unsigned long me = atomic_fetch_add(&invocations, 1) * 16;
	if (atomic_fetch_add(&in_handler, 1))
		atomic_fetch_add(&nested, 1);
	for (int i = 0; i < 16; i++)
		mine[i] = me + (unsigned long)i;
	/* mostly hooks, deep (long stack walks): a nested signal often arrives while the
	 * tracer works for this one */
	deep_writes(sig == SIGUSR1 ? handler_depth : 1);
	nanosleep(&ts, NULL);
	if (sig == SIGUSR1) {
		/* a contended lock; nothing may interrupt it (a handler waiting for the lock its
		 * interrupted self holds would wait forever) */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		char b;
		if (write(lockreq[1], "r", 1) != 1 || read(lockheld[0], &b, 1) != 1)
			_exit(3);
		pthread_mutex_lock(&hm);
		pthread_mutex_unlock(&hm);
		if (write(locktaken[1], "t", 1) != 1)
			_exit(3);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	for (int i = 0; i < 16; i++)
		if (mine[i] != me + (unsigned long)i)
			atomic_store(&frames_overwritten, 1);
	atomic_fetch_sub(&in_handler, 1);
	if (sig == SIGUSR1 && write(acks[1], "a", 1) != 1)
		_exit(3);
	/* the next timer's signal 200 us after this one's end: the rest of the program goes
	 * on however slow the machine (after the end, the timer is gone: that fails) */
	if (sig == SIGUSR2)
		timer_settime(timer, 0, &once, NULL);
	errno = e;
}

/* holds hm, and lets a handler that asked for it have it once it waits for it */
static void *hm_holder(void *arg)
{
	(void)arg;
	char b;
	pthread_mutex_lock(&hm);
	while (read(lockreq[0], &b, 1) == 1 && b == 'r') {
		if (write(lockheld[1], "h", 1) != 1)
			die("write");
		while (mutex_word(&hm) != 2)
			relax();
		pthread_mutex_unlock(&hm);
		if (read(locktaken[0], &b, 1) != 1)
			die("read");
		pthread_mutex_lock(&hm);
	}
	pthread_mutex_unlock(&hm);
	return NULL;
}

static void *sender(void *arg)
{
	(void)arg;
	char b;
	for (int i = 0; i < signals; i++) {
		pthread_kill(target, SIGUSR1);
		if (read(acks[0], &b, 1) != 1)
			die("read ack");
	}
	atomic_store(&sender_done, 1);
	if (write(senderdone[1], "d", 1) != 1)
		die("write");
	return NULL;
}

static int s_altstack(int nest)
{
	size_t bytes = nest ? 64 << 10 : ALT_BYTES;
	unsigned char *mem = malloc(CANARY + bytes);
	if (!mem)
		die("malloc");
	memset(mem, 0xa5, CANARY + bytes);
	stack_t ss = {.ss_sp = mem + CANARY, .ss_size = bytes};
	if (sigaltstack(&ss, NULL))
		die("sigaltstack");
	handler_depth = nest ? 100 : 1;
	signals = nest ? 3 * SIGNALS : SIGNALS;
	struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_ONSTACK | SA_RESTART};
	sigemptyset(&sa.sa_mask); /* SIGUSR2 may interrupt SIGUSR1's handler */
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGUSR2, &sa, NULL))
		die("sigaction");
	if (pipe(acks) || pipe(lockreq) || pipe(lockheld) || pipe(locktaken) || pipe(senderdone))
		die("pipe");
	target = pthread_self();
	fprintf(stderr, "fn handler %lu\n", (unsigned long)(uintptr_t)handler);

	/* nested: SIGUSR2 from a timer, which lands anywhere, the tracer included */
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGUSR2};
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (nest && (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &once, NULL)))
		die("timer");
	pthread_t h, s1;
	if (pthread_create(&h, NULL, hm_holder, NULL) || pthread_create(&s1, NULL, sender, NULL))
		die("pthread_create");
	if (nest) {
		/* waits (every handler records: none interrupts the tracer's own work) */
		char b;
		if (read(senderdone[0], &b, 1) != 1)
			die("read");
	} else {
		/* calls hooks meanwhile: the signals also land in the tracer's work */
		while (!atomic_load(&sender_done))
			write(devnull, "y", 1);
	}
	pthread_join(s1, NULL);
	if (write(lockreq[1], "q", 1) != 1)
		die("write");
	pthread_join(h, NULL);
	if (nest && timer_delete(timer))
		die("timer");
	stack_t off = {.ss_flags = SS_DISABLE};
	sigaltstack(&off, NULL);
	size_t canary_hit = 0, deepest = bytes;
	for (size_t i = 0; i < CANARY; i++)
		canary_hit += mem[i] != 0xa5;
	for (size_t i = 0; i < bytes && mem[CANARY + i] == 0xa5; i++)
		deepest = bytes - i - 1;
	free(mem);
	printf("handled %d signals%s, below the alternate stack: %s, handler frames: %s\n", signals,
	       nest ? " and a timer's" : "",
	       canary_hit ? "OVERWRITTEN" : "untouched",
	       atomic_load(&frames_overwritten) ? "OVERWRITTEN" : "intact");
	fprintf(stderr, "altstack %zu\nnested %d\n", deepest, atomic_load(&nested));
	return canary_hit || atomic_load(&frames_overwritten);
}

/* ---- 16 KiB thread stacks -------------------------------------------------------------- */

static sigjmp_buf back;
static volatile unsigned level;
static volatile uintptr_t sp1, sp2;

static void on_overflow(int sig)
{
	(void)sig;
	siglongjmp(back, 1);
}

#pragma GCC diagnostic ignored "-Winfinite-recursion" /* it ends at the guard page */
static __attribute__((noinline)) void descend(void)
{
	volatile char pad[64];
	pad[0] = (char)level;
	if (level == 1)
		sp1 = (uintptr_t)pad;
	else if (level == 2)
		sp2 = (uintptr_t)pad;
	level++;
	write(devnull, (const char *)pad, 1);
	descend();
	pad[1] = 0; /* not a tail call */
}

static void *recurser(void *arg)
{
	(void)arg;
	static char alt[64 << 10];
	stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
	if (sigaltstack(&ss, NULL))
		die("sigaltstack");
	if (!sigsetjmp(back, 1)) {
		level = 1;
		descend();
	}
	return NULL;
}

static int s_recurse(void)
{
	struct sigaction sa = {.sa_handler = on_overflow, .sa_flags = SA_ONSTACK | SA_NODEFER};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		die("sigaction");
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 16384);
	fprintf(stderr, "fn descend %lu\n", (unsigned long)(uintptr_t)descend);
	pthread_t t;
	if (pthread_create(&t, &a, recurser, NULL))
		die("pthread_create");
	pthread_join(t, NULL);
	printf("recursion stopped at the guard page\n");
	fprintf(stderr, "recurse %lu %u\n", (unsigned long)(sp1 - sp2), level);
	return 0;
}

int main(int argc, char **argv)
{
	const char *sc = argc > 1 ? argv[1] : "";
	setvbuf(stdout, NULL, _IONBF, 0);
	devnull = open("/dev/null", O_WRONLY);
	if (!strcmp(sc, "measure"))
		return s_measure(argc > 2 ? atoi(argv[2]) : 4);
	if (!strcmp(sc, "altstack"))
		return s_altstack(0);
	if (!strcmp(sc, "altnest"))
		return s_altstack(1);
	if (!strcmp(sc, "recurse"))
		return s_recurse();
	fprintf(stderr, "usage: gt-stack measure|altstack|altnest|recurse\n");
	return 2;
}
