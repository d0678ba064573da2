/* node/mps.c, the pieces the agent runs NVIDIA's MPS control daemon with
 * (agent/mpsd.c): finding the control program in PATH or at a path, under a
 * root (the host at /host); the pipe and log folders; the daemon check
 * against no socket, a dead daemon's socket, a stream listener (the kernel
 * names its pid) and a SOCK_SEQPACKET one as NVIDIA's (its pid file names
 * it); starting `-d` with the daemon's environment; a command through the
 * client, one that fails and one that hangs. Shell scripts play the program.
 * mps_daemon_test.py runs the agent itself against a fake daemon. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "node/mps.h"

static char root[256];
static char saved_path[4096]; /* test_find changes PATH */

static void put(const char *rel, const char *text, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static int setup(void **state)
{
    (void)state;
    umask(022);
    const char *p = getenv("PATH");
    snprintf(saved_path, sizeof saved_path, "%s", p ? p : "/usr/bin:/bin");
    snprintf(root, sizeof root, "/tmp/gsmpsXXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    setenv("PATH", saved_path, 1);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_find(void **state)
{
    (void)state;
    put("/usr/local/bin/" GS_MPS_CONTROL_PROGRAM, "not executable\n", 0644);
    put("/usr/bin/" GS_MPS_CONTROL_PROGRAM, "#!/bin/sh\n", 0755);
    setenv("PATH", "relative/bin:/usr/local/bin:/usr/bin", 1);
    struct gs_mps_run r = {.root = root};
    gs_error err = {0};
    /* In PATH under root: the first executable one; a relative entry never. */
    assert_int_equal(gs_mps_control_find(&r, "", &err), GS_OK);
    assert_string_equal(r.program, "/usr/bin/" GS_MPS_CONTROL_PROGRAM);
    assert_int_equal(gs_mps_control_find(&r, "/usr/bin/" GS_MPS_CONTROL_PROGRAM, &err), GS_OK);
    assert_string_equal(r.program, "/usr/bin/" GS_MPS_CONTROL_PROGRAM);
    /* Not there: the error names the setting, the root and the fix. */
    assert_int_equal(gs_mps_control_find(&r, "/opt/nvidia/" GS_MPS_CONTROL_PROGRAM, &err),
                     GS_ENOENT);
    assert_non_null(strstr(err.msg, "mps_control = /opt/nvidia/" GS_MPS_CONTROL_PROGRAM));
    assert_non_null(strstr(err.msg, root));
    assert_non_null(strstr(err.msg, "mps_daemon = external"));
    assert_int_equal(gs_mps_control_find(&r, "/usr/local/bin/" GS_MPS_CONTROL_PROGRAM, &err),
                     GS_ENOENT); /* not executable */
    assert_int_equal(gs_mps_control_find(&r, "bin/" GS_MPS_CONTROL_PROGRAM, &err), GS_EINVAL);
    assert_non_null(strstr(err.msg, "relative path"));
    setenv("PATH", "/usr/local/bin", 1);
    assert_int_equal(gs_mps_control_find(&r, "", &err), GS_ENOENT);
    assert_non_null(strstr(err.msg, "not in PATH (/usr/local/bin) under root"));
    assert_non_null(strstr(err.msg, "set mps_control"));
    /* Without root the same paths are the agent's own. */
    r.root = "";
    char own[300];
    snprintf(own, sizeof own, "%s/usr/bin", root);
    setenv("PATH", own, 1);
    assert_int_equal(gs_mps_control_find(&r, NULL, &err), GS_OK);
    assert_string_equal(r.program, strcat(own, "/" GS_MPS_CONTROL_PROGRAM));
}

static void test_dirs(void **state)
{
    (void)state;
    struct gs_mps_run r = {
        .root = root, .pipe_dir = "/tmp/nvidia-mps", .log_dir = "/var/log/nvidia-mps"};
    gs_error err = {0};
    assert_int_equal(gs_mps_dirs(&r, &err), GS_OK);
    assert_int_equal(gs_mps_dirs(&r, &err), GS_OK); /* again: there already */
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/tmp/nvidia-mps", root);
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755);
    snprintf(p, sizeof p, "%s/var/log/nvidia-mps", root);
    assert_int_equal(stat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755);
    r.pipe_dir = "tmp/mps";
    assert_int_equal(gs_mps_dirs(&r, &err), GS_EINVAL);
    assert_non_null(strstr(err.msg, "mps_pipe_dir = tmp/mps is not an absolute path"));
    put("/srv/a-file", "", 0644);
    r.pipe_dir = "/tmp/nvidia-mps";
    r.log_dir = "/srv/a-file/log";
    assert_int_equal(gs_mps_dirs(&r, &err), GS_EIO);
    assert_non_null(strstr(err.msg, "mps_log_dir = /srv/a-file/log"));
}

static int listener(int type, const char *rel)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    assert_true(strlen(root) + strlen(rel) < sizeof sa.sun_path);
    memcpy(sa.sun_path, root, strlen(root));
    memcpy(sa.sun_path + strlen(root), rel, strlen(rel) + 1);
    int fd = socket(AF_UNIX, type, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(fd, 4), 0);
    return fd;
}

static void test_answers(void **state)
{
    (void)state;
    put("/run/mps/.keep", "", 0644);
    pid_t pid = -1;
    char why[200];
    assert_int_equal(gs_mps_daemon_answers(root, "/run/mps", &pid, why, sizeof why), 0);
    assert_string_equal(why, "there is no control socket");
    assert_int_equal(pid, 0);
    /* A stream listener: the kernel names it. */
    int fd = listener(SOCK_STREAM, "/run/mps/" GS_MPS_CONTROL_SOCKET);
    assert_int_equal(gs_mps_daemon_answers(root, "/run/mps", &pid, why, sizeof why), 1);
    assert_int_equal(pid, getpid());
    char ctl[512];
    assert_int_equal(gs_mps_daemon_present(root, "/run/mps", ctl, sizeof ctl), 1);
    close(fd);
    /* Its socket file, left behind: nobody listens (what `gpuslice run` checks too). */
    assert_int_equal(gs_mps_daemon_answers(root, "/run/mps", &pid, why, sizeof why), 0);
    assert_non_null(strstr(why, "nobody listens"));
    assert_int_equal(gs_mps_daemon_present(root, "/run/mps", ctl, sizeof ctl), 0);
    assert_non_null(strstr(ctl, "/run/mps/" GS_MPS_CONTROL_SOCKET));
    /* NVIDIA's: SOCK_SEQPACKET, its pid in its pid file. */
    char p[512];
    snprintf(p, sizeof p, "%s/run/mps/" GS_MPS_CONTROL_SOCKET, root);
    unlink(p);
    fd = listener(SOCK_SEQPACKET, "/run/mps/" GS_MPS_CONTROL_SOCKET);
    put("/run/mps/" GS_MPS_PID_FILE, "4242\n", 0644);
    assert_int_equal(gs_mps_daemon_answers(root, "/run/mps", &pid, NULL, 0), 1);
    assert_int_equal(pid, 4242);
    put("/run/mps/" GS_MPS_PID_FILE, "42x\n", 0644);
    assert_int_equal(gs_mps_daemon_answers(root, "/run/mps", &pid, NULL, 0), 1);
    assert_int_equal(pid, 0); /* not a pid: not known */
    close(fd);
    assert_int_equal(gs_mps_daemon_answers(root, "/run/mps", NULL, why, sizeof why), 0);
    assert_non_null(strstr(why, "nobody listens"));
}

static void test_spawn(void **state)
{
    (void)state;
    /* The launcher sees -d and the two folders; an outside value is replaced. */
    put("/bin/mpsctl",
        "#!/bin/sh\necho \"$1 $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY\" > \"$MPS_OUT\"\n",
        0755);
    char out[512], prog[512];
    snprintf(out, sizeof out, "%s/spawned", root);
    snprintf(prog, sizeof prog, "%s/bin/mpsctl", root);
    setenv("MPS_OUT", out, 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", "/wrong", 1);
    struct gs_mps_run r = {.root = "", .pipe_dir = "/p/mps", .log_dir = "/l/mps"};
    snprintf(r.program, sizeof r.program, "%s", prog);
    gs_error err = {0};
    pid_t pid;
    assert_int_equal(gs_mps_daemon_spawn(&r, &pid, &err), GS_OK);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char line[256] = "";
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "-d /p/mps /l/mps\n");
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

static void test_command(void **state)
{
    (void)state;
    struct gs_mps_run r = {.root = "", .pipe_dir = "/p/mps", .log_dir = "/l/mps"};
    snprintf(r.program, sizeof r.program, "%s/bin/client", root);
    gs_error err = {0};
    char out[128];
    put("/bin/client", "#!/bin/sh\nread l; echo \"got $l\"; echo \"in $CUDA_MPS_PIPE_DIRECTORY\"\n",
        0755);
    assert_int_equal(gs_mps_control_command(&r, "quit", 5000, out, sizeof out, &err), GS_OK);
    assert_string_equal(out, "got quit in /p/mps ");
    put("/bin/client", "#!/bin/sh\necho 'Cannot find MPS control daemon process'\nexit 3\n", 0755);
    assert_int_equal(gs_mps_control_command(&r, "quit", 5000, out, sizeof out, &err), GS_EIO);
    assert_non_null(strstr(err.msg, "'quit'"));
    assert_non_null(strstr(err.msg, "exit status 3"));
    assert_non_null(strstr(err.msg, "Cannot find MPS control daemon process"));
    /* One that never ends is killed after the timeout. */
    put("/bin/client", "#!/bin/sh\nexec sleep 30\n", 0755);
    assert_int_equal(gs_mps_control_command(&r, "quit", 200, out, sizeof out, &err), GS_EIO);
    assert_non_null(strstr(err.msg, "did not finish 'quit' within 200 ms"));
    snprintf(r.program, sizeof r.program, "%s/bin/none", root);
    assert_int_equal(gs_mps_control_command(&r, "quit", 5000, out, sizeof out, &err), GS_EIO);
    assert_non_null(strstr(err.msg, "exit status 127"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_find, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dirs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
