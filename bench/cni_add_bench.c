/* cni_add_bench.c — how long the CNI plugin takes per call, as a runtime runs it (a new process,
 * the CNI environment, the configuration on stdin, the result read back):
 *   - ADD of a pod that is enrolled: the netns cookie, the state file, one call to the node's
 *     CNI agent, which decides from its cache and enrolls on the map writer's socket;
 *   - DEL of that pod (state file, one call: unenroll);
 *   - ADD of a sandbox that names no pod: the binary started, its configuration parsed and the
 *     result passed through;
 *   - VERSION: only starting the plugin;
 *   - and the baseline, measured interleaved in the same run: /bin/true started the same way.
 * Prints a markdown table: min / p50 / p99 / max in milliseconds, and p50 over the baseline's.
 *   cni_add_bench --plugin PATH --config FILE --netns PATH --namespace NS [--count N] */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct run {
	const char *plugin, *netns, *ns;
	char *config;
	size_t config_len;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One call; returns its duration in ms, or -1 on a failed call (reported). */
static double call(const struct run *r, const char *command, const char *pod, int i)
{
	char env_cmd[64], env_id[64], env_netns[512], env_args[256], out[65536];
	char *envp[] = { env_cmd, env_id, env_netns, env_args, "CNI_IFNAME=eth0",
			 "CNI_PATH=/nonexistent", NULL };
	int in_pipe[2], out_pipe[2], status;
	posix_spawn_file_actions_t fa;
	const char *prog = !strcmp(command, "TRUE") ? "/bin/true" : r->plugin;
	char *argv[] = { (char *)prog, NULL };
	size_t got = 0;
	double t0, t1;
	pid_t pid;
	ssize_t n;

	snprintf(env_cmd, sizeof(env_cmd), "CNI_COMMAND=%s", command);
	snprintf(env_id, sizeof(env_id), "CNI_CONTAINERID=bench-%s-%d", pod ? "pod" : "pass", i);
	snprintf(env_netns, sizeof(env_netns), "CNI_NETNS=%s", r->netns);
	if (pod)
		snprintf(env_args, sizeof(env_args),
			 "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s-%d", r->ns, pod,
			 i);
	else
		snprintf(env_args, sizeof(env_args), "CNI_ARGS=IgnoreUnknown=1");
	if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
	t0 = now_ms();
	if (posix_spawn(&pid, prog, &fa, NULL, argv, envp) != 0) {
		perror("posix_spawn");
		exit(1);
	}
	close(in_pipe[0]);
	close(out_pipe[1]);
	/* /bin/true does not read it: EPIPE is fine (SIGPIPE is ignored) */
	if (write(in_pipe[1], r->config, r->config_len) != (ssize_t)r->config_len &&
	    strcmp(command, "TRUE"))
		perror("write");
	close(in_pipe[1]);
	while ((n = read(out_pipe[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)n;
	close(out_pipe[0]);
	waitpid(pid, &status, 0);
	t1 = now_ms();
	posix_spawn_file_actions_destroy(&fa);
	out[got] = '\0';
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    (!strcmp(command, "ADD") && !strstr(out, "\"ips\""))) {
		fprintf(stderr, "%s %d failed: %s\n", command, i, out);
		return -1;
	}
	return t1 - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
	int i = (int)(p / 100.0 * (n - 1) + 0.5);

	return v[i];
}

static void row(const char *name, double *v, int n, double base_p50)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", name, v[0], pct(v, n, 50),
	       pct(v, n, 99), v[n - 1], base_p50 > 0 ? pct(v, n, 50) / base_p50 : 1.0);
}

int main(int argc, char **argv)
{
	struct run r = { 0 };
	const char *config = NULL;
	int count = 200, failed = 0;
	double *add, *del, *base, *ver, *floor;
	FILE *f;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--plugin"))
			r.plugin = argv[i + 1];
		else if (!strcmp(argv[i], "--config"))
			config = argv[i + 1];
		else if (!strcmp(argv[i], "--netns"))
			r.netns = argv[i + 1];
		else if (!strcmp(argv[i], "--namespace"))
			r.ns = argv[i + 1];
		else if (!strcmp(argv[i], "--count"))
			count = atoi(argv[i + 1]);
	}
	if (!r.plugin || !config || !r.netns || !r.ns || count < 2) {
		fprintf(stderr, "usage: cni_add_bench --plugin PATH --config FILE --netns PATH "
				"--namespace NS [--count N]\n");
		return 2;
	}
	f = fopen(config, "r");
	if (!f || !(r.config = malloc(1 << 20)))
		return 1;
	r.config_len = fread(r.config, 1, (1 << 20) - 1, f);
	fclose(f);
	add = calloc((size_t)count, sizeof(double));
	del = calloc((size_t)count, sizeof(double));
	base = calloc((size_t)count, sizeof(double));
	ver = calloc((size_t)count, sizeof(double));
	floor = calloc((size_t)count, sizeof(double));
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < count; i++) {
		/* interleaved, so drift on a noisy machine hits all alike */
		floor[i] = call(&r, "TRUE", NULL, i);
		ver[i] = call(&r, "VERSION", NULL, i);
		base[i] = call(&r, "ADD", NULL, i);
		add[i] = call(&r, "ADD", "pod", i);
		del[i] = call(&r, "DEL", "pod", i);
		failed += floor[i] < 0 || ver[i] < 0 || base[i] < 0 || add[i] < 0 || del[i] < 0;
	}
	if (failed) {
		fprintf(stderr, "%d of %d rounds had a failed call\n", failed, count);
		return 1;
	}
	qsort(floor, (size_t)count, sizeof(*floor), cmp);
	printf("| call | min | p50 | p99 | max | p50 over /bin/true's |\n|---|---|---|---|---|---|\n");
	row("baseline: /bin/true, started the same way", floor, count, pct(floor, count, 50));
	row("VERSION (the plugin's start only)", ver, count, pct(floor, count, 50));
	row("ADD, no pod (start + parse + pass through)", base, count, pct(floor, count, 50));
	row("**ADD, pod enrolled** (one call to the node's agent: its cache, the enroll)", add,
	    count, pct(floor, count, 50));
	row("**DEL of that pod** (one call: the unenroll)", del, count, pct(floor, count, 50));
	return 0;
}
