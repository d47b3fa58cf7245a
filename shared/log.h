/* log.h — leveled logging to stderr, level changeable at run time (flag, SIGUSR1/SIGUSR2, or an
 * admin request). One line per event: time, level, process, message; as text or, with
 * --log-format json, one JSON object per line (Istio's --log_as_json fields: time, level, scope,
 * msg). When stderr is the systemd journal (JOURNAL_STREAM names it), every line starts with
 * its syslog priority (<3> error, <4> warn, <6> info, <7> debug), which journald strips and
 * keeps as the priority, so `journalctl -p err` finds the errors. */
#ifndef KM_SHARED_LOG_H
#define KM_SHARED_LOG_H

#include <stddef.h>

enum km_log_level {
	KM_LOG_ERROR = 0,
	KM_LOG_WARN = 1,
	KM_LOG_INFO = 2,
	KM_LOG_DEBUG = 3,
};

enum km_log_format {
	KM_LOG_TEXT = 0,
	KM_LOG_JSON = 1,
};

/* Name the process in its lines, and look whether stderr is the journal. */
void km_log_init(const char *process);
void km_log_set_format(enum km_log_format format);
/* Parses "text", "json". Returns 0 or -1. */
int km_log_parse_format(const char *s, enum km_log_format *out);
/* Prefix lines with their syslog priority (km_log_init turns it on under the journal). */
void km_log_set_priority_prefix(int on);
/* One line as it is written (no newline), msg already formatted: what km_log writes. Returns
 * its length (truncated to cap - 1). */
size_t km_log_format_line(char *line, size_t cap, enum km_log_level level, long long sec,
			  long nsec, const char *msg);
void km_log_set_level(enum km_log_level level);
enum km_log_level km_log_get_level(void);
/* Parses "error", "warn", "info", "debug". Returns 0 or -1. */
int km_log_parse_level(const char *s, enum km_log_level *out);
const char *km_log_level_name(enum km_log_level level);
int km_log_enabled(enum km_log_level level);

void km_log(enum km_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same whatever the process's level: for lines another level already chose (the BPF log's). */
void km_log_always(enum km_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies a peer's string (a process or pod name) for a log line: bytes outside printable ASCII
 * become \xNN, so a peer cannot forge lines or hide text with control bytes. Truncates to dstlen. */
void km_log_safe(char *dst, size_t dstlen, const char *src);

#define km_error(...) km_log(KM_LOG_ERROR, __VA_ARGS__)
#define km_warn(...) km_log(KM_LOG_WARN, __VA_ARGS__)
#define km_info(...) km_log(KM_LOG_INFO, __VA_ARGS__)
#define km_debug(...)                                                                              \
	do {                                                                                       \
		if (km_log_enabled(KM_LOG_DEBUG))                                                  \
			km_log(KM_LOG_DEBUG, __VA_ARGS__);                                         \
	} while (0)

#endif
