/* cni_pending.c — enrollments the CNI plugin left pending (see cni_pending.h). */
#include "services/map-writer/cni_pending.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ipc/message.h"
#include "shared/log.h"
#include "shared/netns.h"

#define PENDING_FILE_MAX (64u << 10)

enum outcome { KEEP, DONE, DROP };

/* One file, its lock held: apply it, or say why it stays or goes. */
static enum outcome apply(struct km_cni_pending *p, int fd, const char *name)
{
	uint8_t buf[PENDING_FILE_MAX];
	char err[512], pod[300];
	km_envelope *env;
	uint64_t cookie;
	ssize_t n = read(fd, buf, sizeof(buf));
	enum outcome out;
	Kmesh__Ipc__Code code;

	env = n > 0 && (size_t)n < sizeof(buf) ? km_msg_unpack(buf, (size_t)n) : NULL;
	if (!env || env->body_case != KMESH__IPC__ENVELOPE__BODY_ENROLL) {
		km_msg_free(env);
		km_warn("pending enrollment %s is not a valid Enroll request; dropped", name);
		return DROP;
	}
	km_log_safe(pod, sizeof(pod), env->enroll->pod ? env->enroll->pod : "-");
	/* the pod is still there: its namespace has the cookie the plugin read */
	if (!env->enroll->netns_path || !*env->enroll->netns_path ||
	    km_netns_cookie(env->enroll->netns_path, &cookie, err, sizeof(err)) != 0 ||
	    cookie != env->enroll->netns_cookie) {
		km_info("pending enrollment of %s: its network namespace is gone; dropped", pod);
		km_msg_free(env);
		return DROP;
	}
	code = km_mw_enroll(p->rq, env->enroll, err, sizeof(err));
	if (code == KMESH__IPC__CODE__OK) {
		km_info("enrolled %s (netns cookie %llu), which started while the map writer was "
			"unavailable (fail-open)", pod, (unsigned long long)cookie);
		out = DONE;
	} else if (code == KMESH__IPC__CODE__BAD_REQUEST) {
		km_warn("pending enrollment of %s refused: %s; dropped", pod, err);
		out = DROP;
	} else {
		km_warn("pending enrollment of %s: %s: %s; tried again in %u s", pod,
			km_msg_code_name(code), err, KM_CNI_PENDING_INTERVAL_MS / 1000);
		out = KEEP;
	}
	km_msg_free(env);
	return out;
}

void km_cni_pending_pass(struct km_cni_pending *p)
{
	struct dirent *de;
	unsigned seen = 0;
	DIR *d;

	if (!p->dir[0] || !(d = opendir(p->dir)))
		return; /* none yet: the plugin makes the directory */
	p->waiting = 0;
	while ((de = readdir(d)) && seen < KM_CNI_PENDING_MAX) {
		struct stat st;
		enum outcome o;
		int fd;

		if (de->d_name[0] == '.')
			continue; /* ., .., and the atomic writer's temporary files */
		seen++;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* the plugin's DEL holds it while it withdraws the file: try later */
		if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 || st.st_nlink == 0 ||
		    !S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		o = apply(p, fd, de->d_name);
		if (o == KEEP)
			p->waiting++;
		else if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno != ENOENT)
			km_warn("cannot remove %s/%s: %s", p->dir, de->d_name, strerror(errno));
		p->enrolled += o == DONE;
		p->dropped += o == DROP;
		close(fd); /* the lock goes with it */
	}
	closedir(d);
}

static void on_timer(uv_timer_t *t)
{
	km_cni_pending_pass(t->data);
}

int km_cni_pending_start(struct km_cni_pending *p, uv_loop_t *loop, const char *state_dir,
			 struct km_mw_requests *rq)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->rq = rq;
	if (!state_dir || !*state_dir)
		return 0;
	snprintf(p->dir, sizeof(p->dir), "%s/pending", state_dir);
	if ((rc = uv_timer_init(loop, &p->timer)) != 0)
		return rc;
	p->timer.data = p;
	p->started = 1;
	km_cni_pending_pass(p); /* what piled up while the map writer was down */
	return uv_timer_start(&p->timer, on_timer, KM_CNI_PENDING_INTERVAL_MS,
			      KM_CNI_PENDING_INTERVAL_MS);
}

void km_cni_pending_stop(struct km_cni_pending *p)
{
	if (p->started && !uv_is_closing((uv_handle_t *)&p->timer))
		uv_close((uv_handle_t *)&p->timer, NULL);
	p->started = 0;
}
