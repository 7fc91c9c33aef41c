/*
 * The floor for bench/run: the least a program can do to read what
 * `gpu-preflight check` reads, and nothing else. It lists
 * ROOT/sys/bus/pci/devices and reads each function's vendor, device and
 * class. Like the check, it reads the rest only for display controllers,
 * accelerators and bridges: the entry's link (the upstream bridges come from
 * its target), the other identity files, `physfn`, `resource` and the first
 * 64 bytes of `config`; then the proc and DMI files and the kernel log. It
 * parses nothing but the class; it adds up the bytes so the reads cannot be
 * skipped.
 *
 * usage: floor ROOT [KERNEL_LOG]
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];
static unsigned long long total;

/* Reads up to `limit` bytes (0: the whole file) from dirfd/name. */
static void slurp(int dirfd, const char *name, size_t limit)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		size_t want = sizeof(buf);
		if (limit && want > limit)
			want = limit;
		ssize_t n = read(fd, buf, want);
		if (n <= 0)
			break;
		total += (unsigned long long)n + (unsigned char)buf[0];
		if (limit) {
			limit -= (size_t)n;
			if (!limit)
				break;
		}
	}
	close(fd);
}

int main(int argc, char **argv)
{
	static const char *const rest[] = {
		"revision", "subsystem_vendor", "subsystem_device", "resource",
	};
	char path[4096], target[4096];
	if (argc < 2) {
		fprintf(stderr, "usage: floor ROOT [KERNEL_LOG]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices", argv[1]);
	int devfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = devfd < 0 ? NULL : fdopendir(devfd);
	if (!dir) {
		perror(path);
		return 3;
	}
	unsigned long functions = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = openat(devfd, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		functions++;
		slurp(fd, "vendor", 0);
		slurp(fd, "device", 0);
		slurp(fd, "class", 0);
		unsigned long cls = strtoul(buf, NULL, 16);
		unsigned long base = cls >> 16, sub = cls >> 8;
		if (base != 0x03 && base != 0x12 && sub != 0x0604 && sub != 0x0607 && sub != 0x0609) {
			close(fd);
			continue;
		}
		ssize_t n = readlinkat(devfd, e->d_name, target, sizeof(target));
		if (n > 0)
			total += (unsigned long long)n;
		for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
			slurp(fd, rest[i], 0);
		n = readlinkat(fd, "physfn", target, sizeof(target));
		if (n > 0)
			total += (unsigned long long)n;
		slurp(fd, "config", 64);
		close(fd);
	}
	closedir(dir);

	static const char *const others[] = {
		"proc/cmdline", "proc/iomem", "proc/cpuinfo",
		"sys/class/dmi/id/bios_vendor", "sys/class/dmi/id/bios_version",
		"sys/class/dmi/id/sys_vendor", "sys/class/dmi/id/product_name",
	};
	int rootfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		slurp(rootfd, others[i], 0);
	if (argc > 2)
		slurp(AT_FDCWD, argv[2], 0);
	printf("%lu functions, %llu\n", functions, total);
	return 0;
}
