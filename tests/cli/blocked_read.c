/* blocked_read: says "ready" on stdout, then blocks in a read of stdin until stdin ends
 * ("stdin closed") or the process is killed, which is what the tests do to it. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char b;
	if (write(1, "ready\n", 6) != 6)
		return 1;
	ssize_t n = read(0, &b, 1);
	printf("stdin closed (%zd)\n", n);
	return 0;
}
