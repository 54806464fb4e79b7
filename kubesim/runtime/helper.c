/*
 * helper.c - the two processes kubesim re-executes itself as (runtime.h), so that all the
 * namespace and mount work happens in a fresh single-threaded process, never between fork
 * and exec of the multi-threaded server:
 *
 *   kubesim __runtime-sandbox READYFD HOSTNAME [DIR SIZE]...
 *       a Pod's sandbox ("pause"): new network, UTS, IPC and mount namespaces; a tmpfs on
 *       each DIR (the Pod's medium: Memory emptyDirs, sized); tells READYFD, then sleeps
 *       until signalled. The namespaces live as long as it does. Also the node namespace.
 *   kubesim __runtime-exec SPECFILE
 *       one container (or exec probe): joins the sandbox's (or a container's) namespaces,
 *       takes a private mount namespace with the volume binds the spec lists, drops to the
 *       spec's user and execs the command. stdout/stderr are the log file already.
 *
 * Both die with the runtime thread that started them (PR_SET_PDEATHSIG), so a killed
 * kubesim leaves no process or namespace behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kubesim/runtime/internal.h"

static volatile sig_atomic_t sandbox_stop;

static void on_term(int sig)
{
    (void)sig;
    sandbox_stop = 1;
}

static int sandbox_main(int argc, char **argv)
{
    int fd;
    sigset_t none;

    if (argc < 4 || (argc - 4) % 2)
        return 2;
    fd = atoi(argv[2]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC) < 0) {
        fprintf(stderr, "kubesim sandbox: unshare: %s\n", strerror(errno));
        return 1;
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        fprintf(stderr, "kubesim sandbox: private mounts: %s\n", strerror(errno));
        return 1;
    }
    if (sethostname(argv[3], strnlen(argv[3], 63)) < 0)
        fprintf(stderr, "kubesim sandbox: sethostname: %s\n", strerror(errno));
    for (int i = 4; i + 1 < argc; i += 2) {
        char opt[64];
        snprintf(opt, sizeof(opt), "mode=1777%s%s", argv[i + 1][0] != '0' ? ",size=" : "",
                 argv[i + 1][0] != '0' ? argv[i + 1] : "");
        if (mount("tmpfs", argv[i], "tmpfs", MS_NOSUID | MS_NODEV, opt) < 0) {
            fprintf(stderr, "kubesim sandbox: tmpfs on %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
    }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    if (write(fd, "1", 1) != 1)
        return 1;
    close(fd);
    sigemptyset(&none);
    while (!sandbox_stop)
        sigsuspend(&none);
    return 0;
}

/* ---- container ------------------------------------------------------------------------ */

static int join(pid_t pid, const char *ns, int type)
{
    char p[64];
    int fd, rc;

    snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns);
    if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    rc = setns(fd, type) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static int mkdirs(const char *path, mode_t mode)
{
    char p[PATH_MAX];

    if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
        return -ENAMETOOLONG;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            return -errno;
        *s = '/';
    }
    if (mkdir(p, mode) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

/* Ancestors this process put an overlay on (resolved paths): below them, new
 * directories are private already. */
static char overlaid[8][PATH_MAX];
static int noverlaid;

static bool under_overlay(const char *real)
{
    for (int i = 0; i < noverlaid; i++) {
        size_t l = strlen(overlaid[i]);
        if (!strncmp(real, overlaid[i], l) && (real[l] == '/' || real[l] == '\0'))
            return true;
    }
    return false;
}

/* A mount point that does not exist on the host is made inside this mount namespace only:
 * the deepest existing ancestor (symlinks resolved: /var/run is /run) gets an overlay whose
 * upper layer is a private tmpfs, so the new directories never reach the host's file
 * system. */
static int ensure_target(const char *dst, bool dir, const char *scratch)
{
    char anc[2 * PATH_MAX], real[PATH_MAX], target[2 * PATH_MAX], up[PATH_MAX + 16],
         wk[PATH_MAX + 16], opt[3 * PATH_MAX + 64];
    struct stat st;
    char *slash;
    const char *rest;
    int rc;

    if (stat(dst, &st) == 0)
        return 0;
    snprintf(anc, sizeof(anc), "%s", dst);
    for (;;) {
        slash = strrchr(anc, '/');
        if (!slash || slash == anc) {
            /* never an overlay over / itself: it would hide /proc, /dev and the rest */
            fprintf(stderr, "kubesim: mount point %s: a new directory directly under / would "
                    "change the host; use a path below an existing directory\n", dst);
            return -ENOENT;
        }
        *slash = '\0';
        if (stat(anc, &st) == 0 && S_ISDIR(st.st_mode))
            break;
    }
    if (!realpath(anc, real))
        return -errno;
    rest = dst + strlen(anc);                 /* "/a/b" below the ancestor */
    snprintf(target, sizeof(target), "%s%s", real, rest);
    if (!under_overlay(real)) {
        if (noverlaid >= 8)
            return -E2BIG;
        if (noverlaid == 0 && mount("tmpfs", scratch, "tmpfs", 0, "mode=0700") < 0)
            return -errno;
        snprintf(up, sizeof(up), "%s/u%d", scratch, noverlaid);
        snprintf(wk, sizeof(wk), "%s/w%d", scratch, noverlaid);
        if (mkdir(up, 0755) < 0 || mkdir(wk, 0755) < 0)
            return -errno;
        snprintf(opt, sizeof(opt), "lowerdir=%s,upperdir=%s,workdir=%s", real, up, wk);
        if (mount("overlay", real, "overlay", 0, opt) < 0)
            return -errno;
        snprintf(overlaid[noverlaid++], PATH_MAX, "%s", real);
    }
    if (dir)
        return mkdirs(target, 0755);
    snprintf(anc, sizeof(anc), "%s", target);
    if ((slash = strrchr(anc, '/')) && slash != anc) {
        *slash = '\0';
        if ((rc = mkdirs(anc, 0755)) < 0)
            return rc;
    }
    if ((rc = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)) < 0)
        return -errno;
    close(rc);
    return 0;
}

static const char *jstr(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

static long jnum(const cJSON *o, const char *k, long def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

static char **str_array(const cJSON *a)
{
    int n = cJSON_GetArraySize(a), i = 0;
    char **v = calloc((size_t)n + 1, sizeof(*v));
    const cJSON *e;

    if (!v)
        return NULL;
    cJSON_ArrayForEach(e, a)
        v[i++] = cJSON_IsString(e) ? e->valuestring : (char *)"";
    return v;
}

#define SPEC_MAX_WORDS 4096
#define SPEC_MAX_MOUNTS 256

static bool id_ok(const cJSON *v)
{
    return !v || (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 2147483647.0 &&
                  v->valuedouble == (double)(long)v->valuedouble);
}

static bool path_ok(const cJSON *v)
{
    return cJSON_IsString(v) && v->valuestring[0] == '/' && strlen(v->valuestring) < PATH_MAX;
}

int runtime__spec_check(const cJSON *spec, char *err, size_t errlen)
{
    const char *ids[] = { "sandbox", "join", "uid", "gid", "fsGroup" };
    const cJSON *argv = cJSON_GetObjectItemCaseSensitive(spec, "argv");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(spec, "env");
    const cJSON *mounts = cJSON_GetObjectItemCaseSensitive(spec, "mounts"), *e;
    const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(spec, "cwd");
    const cJSON *scratch = cJSON_GetObjectItemCaseSensitive(spec, "scratch");

    if (!cJSON_IsObject(spec)) {
        snprintf(err, errlen, "not an object");
        return -EINVAL;
    }
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (!id_ok(cJSON_GetObjectItemCaseSensitive(spec, ids[i]))) {
            snprintf(err, errlen, "%s: not an id", ids[i]);
            return -EINVAL;
        }
    if (!cJSON_IsArray(argv) || cJSON_GetArraySize(argv) < 1 ||
        cJSON_GetArraySize(argv) > SPEC_MAX_WORDS || !cJSON_IsString(argv->child) ||
        !argv->child->valuestring[0]) {
        snprintf(err, errlen, "argv: want 1 to %d words, the first not empty", SPEC_MAX_WORDS);
        return -EINVAL;
    }
    cJSON_ArrayForEach(e, argv)
        if (!cJSON_IsString(e)) {
            snprintf(err, errlen, "argv: a word is not a string");
            return -EINVAL;
        }
    if (env && (!cJSON_IsArray(env) || cJSON_GetArraySize(env) > SPEC_MAX_WORDS)) {
        snprintf(err, errlen, "env: want at most %d strings", SPEC_MAX_WORDS);
        return -EINVAL;
    }
    cJSON_ArrayForEach(e, env)
        if (!cJSON_IsString(e) || !strchr(e->valuestring, '=') || e->valuestring[0] == '=') {
            snprintf(err, errlen, "env: want K=V strings");
            return -EINVAL;
        }
    if (mounts && (!cJSON_IsArray(mounts) || cJSON_GetArraySize(mounts) > SPEC_MAX_MOUNTS)) {
        snprintf(err, errlen, "mounts: want at most %d", SPEC_MAX_MOUNTS);
        return -EINVAL;
    }
    cJSON_ArrayForEach(e, mounts) {
        const cJSON *ro = cJSON_GetObjectItemCaseSensitive(e, "readOnly");
        if (!path_ok(cJSON_GetObjectItemCaseSensitive(e, "src")) ||
            !path_ok(cJSON_GetObjectItemCaseSensitive(e, "dst")) || (ro && !cJSON_IsBool(ro))) {
            snprintf(err, errlen, "mounts: want {src, dst} absolute paths");
            return -EINVAL;
        }
    }
    if ((cwd && !cJSON_IsString(cwd)) || (scratch && !path_ok(scratch))) {
        snprintf(err, errlen, "cwd/scratch: want paths");
        return -EINVAL;
    }
    return 0;
}

static int fail(const char *what, int err)
{
    fprintf(stderr, "kubesim: cannot start container: %s: %s\n", what, strerror(err));
    return RUNTIME_EXIT_START_ERROR;
}

static int exec_main(int argc, char **argv)
{
    cJSON *spec = NULL;
    char *text = NULL, **args, **env;
    const cJSON *m;
    const char *cwd, *scratch;
    char why[128];
    size_t len = 0;
    long uid, gid;
    pid_t sandbox, target;
    int rc;

    if (argc != 3)
        return 2;
    if (runtime__read_file(argv[2], 1 << 20, &text, &len) < 0 ||
        !(spec = cJSON_ParseWithLength(text, len)))
        return fail("spec", EINVAL);
    if (runtime__spec_check(spec, why, sizeof(why)) < 0)
        return fail(why, EINVAL);
    sandbox = (pid_t)jnum(spec, "sandbox", 0);
    target = (pid_t)jnum(spec, "join", 0);
    scratch = jstr(spec, "scratch");
    /* the container dies with the runtime thread; setuid below clears this, so it is set
     * again after it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (target) {
        /* an exec probe: the container's own namespaces, mounts as they are */
        if ((rc = join(target, "net", CLONE_NEWNET)) < 0 ||
            (rc = join(target, "uts", CLONE_NEWUTS)) < 0 ||
            (rc = join(target, "ipc", CLONE_NEWIPC)) < 0 ||
            (rc = join(target, "mnt", CLONE_NEWNS)) < 0)
            return fail("join the container's namespaces", -rc);
    } else {
        if ((rc = join(sandbox, "net", CLONE_NEWNET)) < 0 ||
            (rc = join(sandbox, "uts", CLONE_NEWUTS)) < 0 ||
            (rc = join(sandbox, "ipc", CLONE_NEWIPC)) < 0 ||
            (rc = join(sandbox, "mnt", CLONE_NEWNS)) < 0)
            return fail("join the Pod's namespaces", -rc);
        if (unshare(CLONE_NEWNS) < 0)
            return fail("mount namespace", errno);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
            return fail("private mounts", errno);
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(spec, "mounts")) {
            const char *src = jstr(m, "src"), *dst = jstr(m, "dst");
            struct stat st;
            if (!src || !dst || stat(src, &st) < 0)
                return fail(src ? src : "mount source", ENOENT);
            if ((rc = ensure_target(dst, S_ISDIR(st.st_mode), scratch)) < 0)
                return fail(dst, -rc);
            if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                return fail(dst, errno);
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "readOnly")) &&
                mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
                return fail(dst, errno);
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "readOnlyRoot")) &&
            mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
            return fail("read-only root", errno);
    }
    uid = jnum(spec, "uid", -1);
    gid = jnum(spec, "gid", uid >= 0 ? uid : -1);
    if (gid >= 0) {
        gid_t g = (gid_t)gid, groups[2] = { g, (gid_t)jnum(spec, "fsGroup", gid) };
        if (setgroups(groups[1] != g ? 2 : 1, groups) < 0 || setgid(g) < 0)
            return fail("setgid", errno);
    }
    if (uid >= 0 && setuid((uid_t)uid) < 0)
        return fail("setuid", errno);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    cwd = jstr(spec, "cwd");
    if (chdir(cwd && *cwd ? cwd : "/") < 0)
        return fail(cwd, errno);
    args = str_array(cJSON_GetObjectItemCaseSensitive(spec, "argv"));
    env = str_array(cJSON_GetObjectItemCaseSensitive(spec, "env"));
    if (!args || !env || !args[0])
        return fail("command", EINVAL);
    for (char **e = env; *e; e++)
        if (!strncmp(*e, "PATH=", 5))
            setenv("PATH", *e + 5, 1);   /* execvpe searches the caller's PATH */
    close_range(3, ~0u, 0);
    execvpe(args[0], args, env);
    rc = errno;
    fprintf(stderr, "kubesim: exec \"%s\": %s\n", args[0], strerror(rc));
    return rc == ENOENT ? RUNTIME_EXIT_NOT_FOUND : RUNTIME_EXIT_START_ERROR;
}

int runtime_helper_main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "__runtime-sandbox"))
        return sandbox_main(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "__runtime-exec"))
        return exec_main(argc, argv);
    return -1;
}
