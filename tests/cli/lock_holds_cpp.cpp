// lock_holds_cpp: lock_holds.c's "mutex" with C++'s std::mutex, std::thread and
// std::condition_variable (pthread objects underneath): "holder" takes hold_lock once by
// try_lock, then N times for about HOLD_NS each, timing every hold itself; "contender-1" and
// "contender-2" take it M times for SHORT_NS, contender-1's first try waiting for the
// holder's first hold; main waits on done_cond until the holder is done.  stdout and stderr
// as lock_holds.c's.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "../preload/targets/wait_blocked.h"

static const int n_holds = 20, m_holds = 10;
static const std::chrono::nanoseconds hold_time(5000000), short_time(500000);

static std::mutex hold_lock, done_lock;
static std::condition_variable done_cond;
static bool done;
static int tid_pipe[2], go_pipe[2];
static std::atomic<unsigned long long> acquisitions, holds, held_ns, holder_holds, holder_ns;

static void timed(std::chrono::steady_clock::time_point since, bool by_holder)
{
	unsigned long long ns =
		(unsigned long long)std::chrono::duration_cast<std::chrono::nanoseconds>(
			std::chrono::steady_clock::now() - since)
			.count();
	holds++;
	held_ns += ns;
	if (by_holder) {
		holder_holds++;
		holder_ns += ns;
	}
}

static void contender_main(int k)
{
	char name[16];
	std::snprintf(name, sizeof name, "contender-%d", k);
	pthread_setname_np(pthread_self(), name);
	if (k == 1) {
		pid_t me = gt_gettid();
		char go;
		if (write(tid_pipe[1], &me, sizeof me) != sizeof me ||
		    read(go_pipe[0], &go, 1) != 1)
			std::exit(1);
	}
	for (int i = 0; i < m_holds; i++) {
		std::lock_guard<std::mutex> hold(hold_lock);
		acquisitions++;
		auto since = std::chrono::steady_clock::now();
		std::this_thread::sleep_for(short_time);
		timed(since, false);
	}
}

static void holder_main()
{
	pthread_setname_np(pthread_self(), "holder");
	if (!hold_lock.try_lock())
		std::exit(1);
	acquisitions++;
	auto since = std::chrono::steady_clock::now();
	std::this_thread::sleep_for(hold_time);
	timed(since, true);
	hold_lock.unlock();
	std::thread contenders[2] = { std::thread(contender_main, 1),
				      std::thread(contender_main, 2) };
	pid_t first;
	if (read(tid_pipe[0], &first, sizeof first) != sizeof first)
		std::exit(1);
	for (int i = 0; i < n_holds; i++) {
		hold_lock.lock();
		acquisitions++;
		since = std::chrono::steady_clock::now();
		if (i == 0) { // contender-1 waits for this hold
			if (write(go_pipe[1], "g", 1) != 1)
				std::exit(1);
			gt_wait_blocked(first, SYS_futex, (uintptr_t)&hold_lock,
					(uintptr_t)(&hold_lock + 1));
		}
		std::this_thread::sleep_for(hold_time);
		timed(since, true);
		hold_lock.unlock();
	}
	for (auto &t : contenders)
		t.join();
	std::lock_guard<std::mutex> hold(done_lock);
	done = true;
	done_cond.notify_one();
}

int main()
{
	if (pipe(tid_pipe) != 0 || pipe(go_pipe) != 0)
		return 1;
	unsigned cond_waits = 0;
	std::unique_lock<std::mutex> wait(done_lock);
	std::thread holder(holder_main);
	while (!done) {
		done_cond.wait(wait);
		cond_waits++;
	}
	wait.unlock();
	holder.join();
	std::printf("mutex: acquisitions=%llu holds=%llu holder_holds=%llu reads=0 ownerdead=0\n",
		    acquisitions.load(), holds.load(), holder_holds.load());
	std::printf("time: mean_ns=%llu holder_mean_ns=%llu\n", held_ns / holds,
		    holder_ns / holder_holds);
	std::fprintf(stderr, "lock_holds: hold_lock=%p done_lock=%p cond_waits=%u\n",
		     (void *)&hold_lock, (void *)&done_lock, cond_waits);
	return 0;
}
