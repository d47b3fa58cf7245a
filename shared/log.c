/* log.c — leveled stderr logging (see log.h). */
#include "shared/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *log_process = "kmesh";
static enum km_log_level log_level = KM_LOG_INFO;
static enum km_log_format log_format = KM_LOG_TEXT;
static int log_priority_prefix;
static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const char level_priority[] = { '3', '4', '6', '7' }; /* syslog: err, warning, info, debug */

/* systemd sets JOURNAL_STREAM=dev:inode for a service whose stderr is the journal; the check
 * against stderr itself keeps a child whose stderr was redirected from inheriting the prefix. */
static int stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void km_log_init(const char *process)
{
	log_process = process;
	log_priority_prefix = stderr_is_journal();
}

void km_log_set_format(enum km_log_format format)
{
	log_format = format == KM_LOG_JSON ? KM_LOG_JSON : KM_LOG_TEXT;
}

int km_log_parse_format(const char *s, enum km_log_format *out)
{
	if (!strcmp(s, "text") || !strcmp(s, "json")) {
		*out = !strcmp(s, "json") ? KM_LOG_JSON : KM_LOG_TEXT;
		return 0;
	}
	return -1;
}

void km_log_set_priority_prefix(int on)
{
	log_priority_prefix = on;
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

/* Append src to line[*n..cap) as the inside of a JSON string (UTF-8 passes as it is; quotes,
 * backslashes and control bytes are escaped). Stops before an escape that would not fit. */
static void json_append(char *line, size_t cap, size_t *n, const char *src)
{
	static const char hex[] = "0123456789abcdef";

	for (; *src; src++) {
		unsigned char c = (unsigned char)*src;
		char esc[7];
		size_t len = 0;

		if (c == '"' || c == '\\') {
			esc[len++] = '\\';
			esc[len++] = (char)c;
		} else if (c == '\n' || c == '\t') {
			esc[len++] = '\\';
			esc[len++] = c == '\n' ? 'n' : 't';
		} else if (c < 0x20 || c == 0x7f) {
			memcpy(esc, "\\u00", 4);
			len = 4;
			esc[len++] = hex[c >> 4];
			esc[len++] = hex[c & 15];
		} else {
			esc[len++] = (char)c;
		}
		if (*n + len >= cap)
			return;
		memcpy(line + *n, esc, len);
		*n += len;
	}
}

size_t km_log_format_line(char *line, size_t cap, enum km_log_level level, long long sec,
			  long nsec, const char *msg)
{
	char stamp[40];
	time_t t = (time_t)sec;
	struct tm tm;
	size_t n = 0, k;

	if (!cap)
		return 0;
	gmtime_r(&t, &tm);
	k = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + k, sizeof(stamp) - k, ".%03ldZ", nsec / 1000000);
	if (log_priority_prefix && cap > 4) {
		line[n++] = '<';
		line[n++] = level <= KM_LOG_DEBUG ? level_priority[level] : '7';
		line[n++] = '>';
	}
	if (log_format == KM_LOG_JSON) {
		k = (size_t)snprintf(line + n, cap - n, "{\"time\":\"%s\",\"level\":\"%s\",\"scope\":\"",
				     stamp, km_log_level_name(level));
		n = n + k < cap ? n + k : cap - 1;
		json_append(line, cap, &n, log_process);
		if (n + 9 < cap) {
			memcpy(line + n, "\",\"msg\":\"", 9);
			n += 9;
			json_append(line, cap - 2, &n, msg); /* room for the closing quote and brace */
			line[n++] = '"';
			line[n++] = '}';
		}
		line[n] = '\0';
		return n;
	}
	k = (size_t)snprintf(line + n, cap - n, "%s %-5s %s: %s", stamp, km_log_level_name(level),
			     log_process, msg);
	return n + k < cap ? n + k : cap - 1;
}

static void vlog(enum km_log_level level, const char *fmt, va_list ap)
{
	char msg[2048], line[4200];
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	km_log_format_line(line, sizeof(line), level, (long long)ts.tv_sec, ts.tv_nsec, msg);
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
