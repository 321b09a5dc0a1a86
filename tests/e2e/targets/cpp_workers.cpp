// cpp-workers: std::thread, std::mutex and std::condition_variable under gotrace.
// A producer hands bursts of items to workers through a queue; workers contend on a mutex.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

static std::mutex queue_mutex;
static std::condition_variable queue_ready;
static std::deque<int> queue;
static bool done = false;

static std::mutex counter_mutex;
static long counter = 0;

static void worker()
{
	for (;;) {
		int item;
		{
			std::unique_lock<std::mutex> lock(queue_mutex);
			queue_ready.wait(lock, [] { return done || !queue.empty(); });
			if (queue.empty())
				return;
			item = queue.front();
			queue.pop_front();
		}
		std::lock_guard<std::mutex> guard(counter_mutex);
		counter += item;
		std::this_thread::sleep_for(std::chrono::microseconds(300)); // held: others contend
	}
}

int main()
{
	std::vector<std::thread> workers;
	for (int i = 0; i < 4; i++)
		workers.emplace_back(worker);
	// bursts of four items: the waiting workers wake together and contend on counter_mutex
	for (int burst = 0; burst < 10; burst++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(3));
		{
			std::lock_guard<std::mutex> lock(queue_mutex);
			for (int k = 1; k <= 4; k++)
				queue.push_back(burst * 4 + k);
		}
		queue_ready.notify_all();
	}
	{
		std::lock_guard<std::mutex> lock(queue_mutex);
		done = true;
	}
	queue_ready.notify_all();
	for (auto &t : workers)
		t.join();
	std::printf("sum %ld\n", counter);
	return 0;
}
