/*
 * The boot step's floor: what any program costs at that point of the boot.
 * It is run by the suite's own hook right after gpu-preflight's, in the
 * same boots, the same way (once, in the foreground, between two kernel-log
 * records the hook writes with the shell's built-in printf), and does
 * nothing but say it ran: one record, as the check's verdict is one. Built
 * static (gcc -static -O2), as gpu-preflight is; vm-tests/run compares the
 * two steps' times (README.md, "The boot step and its floor").
 */
#include <fcntl.h>
#include <unistd.h>

int main(void)
{
	static const char line[] = "<6>gpu-preflight-floor: verdict=ok\n";
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, line, sizeof line - 1) < 0)
			return 1;
		close(fd);
	}
	return 0;
}
