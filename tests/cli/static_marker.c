/* A statically linked program: `gotrace run` must refuse it before it runs, so the
 * marker file it would create never appears. */
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1)
		close(open(argv[1], O_WRONLY | O_CREAT, 0644));
	return 0;
}
