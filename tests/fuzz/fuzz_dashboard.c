/* fuzz_dashboard.c - the Ray Dashboard response parsers (dashboard/codec.c)
 * on arbitrary bytes: job info, submit, stop and logs bodies give a result or an
 * error, never a crash; a job info result has a known status and NUL-terminated
 * strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dashboard/dashboard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *b = (const char *)data;
    struct dash_job_info info;
    char id[DASH_ID_MAX];
    bool stopped;
    char *logs = NULL;
    if (dash_parse_job_info(b, size, &info) == 0) {
        if (info.status[0] && strcmp(info.status, "PENDING") != 0 &&
            strcmp(info.status, "RUNNING") != 0 && !dash_job_status_terminal(info.status))
            abort();
        if (strlen(info.message) >= sizeof(info.message) || strlen(info.job_id) >= sizeof(info.job_id))
            abort();
    }
    if (dash_parse_submit(b, size, id, sizeof(id)) == 0 && strlen(id) >= sizeof(id))
        abort();
    (void)dash_parse_stop(b, size, &stopped);
    if (dash_parse_logs(b, size, &logs) == 0 && !logs)
        abort();
    free(logs);
    return 0;
}
