// A contended C++ class static, Registry::mu_ (std::mutex): held by main until a thread
// blocks on it (seen in /proc, no guessed sleep).  The output is the same traced and
// untraced.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

#include "../preload/targets/wait_blocked.h"

struct Registry {
	static std::mutex mu_;
	static long entries;
};
std::mutex Registry::mu_;
long Registry::entries;

int main()
{
	std::atomic<pid_t> tid{0};
	Registry::mu_.lock();
	std::thread t([&tid] {
		tid = gt_gettid();
		std::lock_guard<std::mutex> hold(Registry::mu_);
		Registry::entries++;
	});
	while (!tid)
		syscall(SYS_sched_yield);
	auto at = reinterpret_cast<uintptr_t>(&Registry::mu_);
	gt_wait_blocked(tid, SYS_futex, at, at + sizeof Registry::mu_);
	Registry::mu_.unlock();
	t.join();
	std::printf("lock-names-cpp: %ld entry\n", Registry::entries);
	return 0;
}
