// A C++ target for `gotrace stacks` (tests/cli/test_stacks.c): two threads transferring
// between two accounts in opposite orders, each holding one std::mutex and waiting for the
// other's; says "ready TID TID" once both sleep on the other's lock (by /proc).
#include <pthread.h>
#include <cstdio>
#include <mutex>
#include <thread>

#include "../preload/targets/wait_blocked.h"

namespace bank {

struct Account {
	std::mutex mu;
	long balance = 100;
};

Account savings, checking;
static pthread_barrier_t both_hold;
static volatile pid_t tids[2];

template <typename Amount>
void transfer(Account &from, Account &to, Amount amount, int who)
{
	tids[who] = gt_gettid();
	std::lock_guard<std::mutex> first(from.mu);
	pthread_barrier_wait(&both_hold);
	std::lock_guard<std::mutex> second(to.mu);
	from.balance -= amount;
	to.balance += amount;
}

}  // namespace bank

int main()
{
	pthread_barrier_init(&bank::both_hold, nullptr, 2);
	std::thread a(bank::transfer<long>, std::ref(bank::savings), std::ref(bank::checking), 10L, 0);
	std::thread b(bank::transfer<long>, std::ref(bank::checking), std::ref(bank::savings), 20L, 1);
	while (!bank::tids[0] || !bank::tids[1])
		syscall(SYS_sched_yield);
	const auto *s = reinterpret_cast<const char *>(&bank::savings.mu);
	const auto *c = reinterpret_cast<const char *>(&bank::checking.mu);
	gt_wait_blocked(bank::tids[0], SYS_futex, (uintptr_t)c, (uintptr_t)(c + sizeof(std::mutex)));
	gt_wait_blocked(bank::tids[1], SYS_futex, (uintptr_t)s, (uintptr_t)(s + sizeof(std::mutex)));
	std::printf("ready %d %d\n", (int)bank::tids[0], (int)bank::tids[1]);
	std::fflush(stdout);
	pause();
	return 0;
}
