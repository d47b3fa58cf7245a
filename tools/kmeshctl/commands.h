/* commands.h — kmeshctl's command families, one file each (cmd_*.c). Each takes the arguments
 * after its name, prints through output.h, and returns the exit code (0 ok, 1 failed, 2 usage). */
#ifndef KM_KMESHCTL_COMMANDS_H
#define KM_KMESHCTL_COMMANDS_H

#include <stddef.h>

#include "tools/kmeshctl/procs.h"

int km_cmd_version(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_log(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_dump(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_inject(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_demand(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_monitoring(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_authz(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_accesslog(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_secret(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_waypoint(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_ready(const struct km_ctl *ctl, int argc, char **argv);
/* enroll: 1 for enroll, 0 for unenroll. */
int km_cmd_enroll(const struct km_ctl *ctl, int argc, char **argv, int enroll);
/* The map writer's BPF log level into level, after setting it to set (NULL: unchanged).
 * Returns 0, or -1 with the reason printed. */
int km_ctl_bpf_log_level(const struct km_ctl *ctl, const char *set, char *level, size_t len);

/* completion: the shell's completion script (bash, zsh, fish), from the command table. */
int km_cmd_completion(const struct km_ctl *ctl, int argc, char **argv);

/* A flag, for completion: its long name, its short letter (0: none), and what follows it: NULL
 * for a switch, "" for a free value, "@file" for a path, else the values separated by spaces. */
struct km_flag_spec {
	const char *name;
	char short_name;
	const char *values;
};

/* One command (command_table.c, the one table main.c dispatches from). */
struct km_command {
	const char *name;
	const char *summary;            /* one line in the overview of kmeshctl --help */
	const char *const *words;       /* what may follow the name (NULL-terminated, or NULL) */
	const struct km_flag_spec *flags; /* its own flags (name NULL ends them), or NULL */
	int (*run)(const struct km_ctl *ctl, int argc, char **argv);
};

extern const struct km_command km_commands[]; /* name NULL ends it */
const struct km_command *km_command_find(const char *name);
/* The global flags (main.c's), for completion. */
const struct km_flag_spec *km_global_flags(void);
/* head, "Commands:" and a line per command, then tail, into buf. Returns the length wanted. */
size_t km_commands_overview(char *buf, size_t len, const char *head, const char *tail);

/* 1 when argv holds -h or --help (and prints usage). */
int km_cmd_wants_help(int argc, char **argv, const char *usage);

#endif
