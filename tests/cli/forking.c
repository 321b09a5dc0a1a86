/* A process tree for `gotrace run`'s one trace: the parent starts a named thread and forks
 * two children; each child runs two named threads that contend on a mutex, joins them and
 * exits with its index; the parent waits for both and prints what each returned. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter;

static void *work(void *name)
{
	pthread_setname_np(pthread_self(), name);
	sched_yield();   /* a name shows from the thread's next start on: this is one */
	for (int i = 0; i < 2000; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static int child(int index)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, work, "kid-worker") != 0)
			return 100;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return counter == 2000 + 4000 ? index : 101; /* 2000: the parent's, before fork */
}

int main(void)
{
	pthread_t helper;
	if (pthread_create(&helper, NULL, work, "parent-worker") != 0)
		return 1;
	pthread_join(helper, NULL);
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		fflush(stdout);
		kids[i] = fork();
		if (kids[i] < 0)
			return 1;
		if (kids[i] == 0)
			_exit(child(i + 1));
	}
	for (int i = 0; i < 2; i++) {
		int status;
		if (waitpid(kids[i], &status, 0) != kids[i] || !WIFEXITED(status))
			return 1;
		printf("child %d returned %d\n", i + 1, WEXITSTATUS(status));
	}
	printf("parent counted %lu\n", counter);
	return 0;
}
