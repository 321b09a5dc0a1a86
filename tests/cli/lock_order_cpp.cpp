// lock_order_cpp: lock_order.c's "two" with C++'s std::mutex taken through std::lock_guard
// (issue 23, item 5): "forward" takes first_mu then second_mu, then "backward" takes them the
// other way round, each phase a thread joined before the next: it never waits.  The
// inversion's sites are the program's functions, not std::mutex::lock inlined into them.
#include <pthread.h>

#include <cstdio>
#include <mutex>
#include <thread>

static std::mutex first_mu, second_mu;
static unsigned done;

__attribute__((noinline)) static void forward()
{
	std::lock_guard<std::mutex> first(first_mu);
	std::lock_guard<std::mutex> second(second_mu);   // second after first
	done++;
}

__attribute__((noinline)) static void backward()
{
	std::lock_guard<std::mutex> second(second_mu);
	std::lock_guard<std::mutex> first(first_mu);   // first after second
	done++;
}

static void phase(const char *name, void (*take)())
{
	std::thread t([=] {
		pthread_setname_np(pthread_self(), name);
		take();
	});
	t.join();
}

int main()
{
	phase("forward", forward);
	phase("backward", backward);
	std::printf("%u phases\n", done);
	return 0;
}
