/* commands.h — kmeshctl's command families, one file each (cmd_*.c). Each takes the arguments
 * after its name, prints through output.h, and returns the exit code (0 ok, 1 failed, 2 usage). */
#ifndef KM_KMESHCTL_COMMANDS_H
#define KM_KMESHCTL_COMMANDS_H

#include "tools/kmeshctl/procs.h"

int km_cmd_version(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_log(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_dump(const struct km_ctl *ctl, int argc, char **argv);
int km_cmd_inject(const struct km_ctl *ctl, int argc, char **argv);
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

/* 1 when argv holds -h or --help (and prints usage). */
int km_cmd_wants_help(int argc, char **argv, const char *usage);

#endif
