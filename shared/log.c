/* log.c — leveled stderr logging (see log.h). */
#include "shared/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *log_process = "kmesh";
static enum km_log_level log_level = KM_LOG_INFO;
static const char *const level_names[] = { "error", "warn", "info", "debug" };

void km_log_init(const char *process)
{
	log_process = process;
}

void km_log_set_level(enum km_log_level level)
{
	if (level > KM_LOG_DEBUG)
		level = KM_LOG_DEBUG;
	log_level = level;
}

enum km_log_level km_log_get_level(void)
{
	return log_level;
}

int km_log_parse_level(const char *s, enum km_log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum km_log_level)i;
			return 0;
		}
	}
	if (strcmp(s, "warning") == 0) {
		*out = KM_LOG_WARN;
		return 0;
	}
	return -1;
}

const char *km_log_level_name(enum km_log_level level)
{
	return level <= KM_LOG_DEBUG ? level_names[level] : "?";
}

int km_log_enabled(enum km_log_level level)
{
	return level <= log_level;
}

static void vlog(enum km_log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ %-5s %s: ", ts.tv_nsec / 1000000,
			      km_log_level_name(level), log_process);
	if (n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	/* One write per line so lines of concurrent processes do not interleave. */
	fprintf(stderr, "%s\n", line);
}

void km_log(enum km_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!km_log_enabled(level))
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void km_log_always(enum km_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void km_log_safe(char *dst, size_t dstlen, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!dstlen)
		return;
	for (; src && *src; src++) {
		unsigned char c = (unsigned char)*src;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (n + 1 >= dstlen)
				break;
			dst[n++] = (char)c;
		} else {
			if (n + 4 >= dstlen)
				break;
			dst[n++] = '\\';
			dst[n++] = 'x';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 15];
		}
	}
	dst[n] = '\0';
}
