/* process_metrics.c — process_* metrics from /proc/self (see process_metrics.h). */
#include "shared/process_metrics.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int km_process_stat_parse(const char *line, struct km_process_stat *out)
{
	const char *p = strrchr(line, ')');
	unsigned long long v[22];
	int n;

	/* after "pid (comm)": state, then fields 4.. (utime is 14, stime 15, starttime 22,
	 * vsize 23, rss 24, counting from 1) */
	if (!p || sscanf(p + 1, " %*c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
				"%llu %llu %llu %llu %llu %llu %llu %llu %llu%n",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
			 &v[11], &v[12], &v[13], &v[14], &v[15], &v[16], &v[17], &v[18], &v[19], &v[20],
			 &v[21], &n) != 22)
		return -1;
	/* v[k] is field k + 4 */
	out->utime_ticks = v[10];
	out->stime_ticks = v[11];
	out->start_ticks = v[18];
	out->vsize_bytes = v[19];
	out->rss_pages = v[20];
	return 0;
}

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	return ok ? 0 : -1;
}

static long long boot_time(void)
{
	char line[256];
	long long btime = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	fclose(f);
	return btime;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

void km_process_metrics(struct km_prom *p, const char *component)
{
	struct km_process_stat st;
	struct rlimit rl;
	char line[1024];
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds = open_fds();
	long long btime = boot_time();

	if (read_line("/proc/self/stat", line, sizeof(line)) != 0 ||
	    km_process_stat_parse(line, &st) != 0 || tick <= 0)
		return;
	km_prom_family(p, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
	km_prom_printf(p, "process_cpu_seconds_total{component=\"%s\"} %.2f\n", component,
		       (double)(st.utime_ticks + st.stime_ticks) / (double)tick);
	km_prom_family(p, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	km_prom_printf(p, "process_resident_memory_bytes{component=\"%s\"} %llu\n", component,
		       (unsigned long long)st.rss_pages * (unsigned long long)page);
	km_prom_family(p, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	km_prom_printf(p, "process_virtual_memory_bytes{component=\"%s\"} %llu\n", component,
		       (unsigned long long)st.vsize_bytes);
	if (fds >= 0) {
		km_prom_family(p, "process_open_fds", "gauge", "Number of open file descriptors.");
		km_prom_printf(p, "process_open_fds{component=\"%s\"} %ld\n", component, fds);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		km_prom_family(p, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		km_prom_printf(p, "process_max_fds{component=\"%s\"} %llu\n", component,
			       (unsigned long long)rl.rlim_cur);
	}
	if (btime >= 0) {
		km_prom_family(p, "process_start_time_seconds", "gauge",
			       "Start time of the process since unix epoch in seconds.");
		km_prom_printf(p, "process_start_time_seconds{component=\"%s\"} %.2f\n", component,
			       (double)btime + (double)st.start_ticks / (double)tick);
	}
}
