// locks_cpp: locks.c's "holder" with C++'s std::mutex and std::thread (a pthread mutex
// underneath): "holder" takes the mutex; "waiter" blocks on it; the holder releases it once
// the waiter sleeps on it, 3 times.  stdout is the same traced or not; stderr gives the
// mutex's address.
#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "../preload/targets/wait_blocked.h"

static std::mutex lock0;
static int tid_pipe[2], go_pipe[2];

static void waiter_main()
{
	pthread_setname_np(pthread_self(), "waiter");
	pid_t me = gt_gettid();
	char go;
	if (write(tid_pipe[1], &me, sizeof me) != sizeof me)
		return;
	for (int round = 0; round < 3; round++) {
		if (read(go_pipe[0], &go, 1) != 1)   // the holder has the lock
			return;
		{ std::lock_guard<std::mutex> hold(lock0); }
		if (write(tid_pipe[1], &me, sizeof me) != sizeof me)   // done with it
			return;
	}
}

static void holder_main()
{
	pthread_setname_np(pthread_self(), "holder");
	std::thread waiter(waiter_main);
	pid_t tid;
	if (read(tid_pipe[0], &tid, sizeof tid) != sizeof tid)
		return;
	for (int round = 0; round < 3; round++) {
		lock0.lock();
		if (write(go_pipe[1], "g", 1) != 1)
			return;
		gt_wait_blocked(tid, SYS_futex, (uintptr_t)&lock0, (uintptr_t)(&lock0 + 1));
		lock0.unlock();
		if (read(tid_pipe[0], &tid, sizeof tid) != sizeof tid)
			return;
	}
	waiter.join();
}

int main(int argc, char **argv)
{
	if (argc < 2 || std::strcmp(argv[1], "holder") != 0) {
		std::fprintf(stderr, "usage: locks_cpp holder\n");
		return 2;
	}
	std::fprintf(stderr, "locks_cpp: lock0=%p\n", (void *)&lock0);
	if (pipe(tid_pipe) != 0 || pipe(go_pipe) != 0)
		return 1;
	std::thread(holder_main).join();
	std::printf("holder: done\n");
	return 0;
}
