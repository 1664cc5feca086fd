/* test_python_absent.c: a bellows built without Python's embedding library (CMake found no
 * python3-embed) refuses a .py policy with one line that says how to get it, and refuses
 * `bellows policies --python` the same way. Built from policies/python/policy_python_none.c
 * whether or not this build has Python, so both builds test it. */
#include "testutil.h"

#include "policy_python.h"

static void test_a_python_policy_says_how_to_get_python(void **state)
{
    (void)state;
    BwError err = {{0}};
    PyPolicyFile *f = (PyPolicyFile *)&err; /* must be reset to NULL */
    PolicyOps ops;
    memset(&ops, 0xff, sizeof ops);
    assert_int_equal(policy_python_open("./mine.py", "--policy", &f, &ops, &err), BW_EUSAGE);
    assert_null(f);
    assert_null(ops.decide);
    assert_string_equal(err.msg, "--policy ./mine.py: this bellows was built without Python "
                                 "policies; install libpython3-dev and python3-numpy (Debian: "
                                 "scripts/setup.sh does) and build it again");
    policy_python_close(NULL);
}

static void test_the_python_interface_is_not_printed(void **state)
{
    (void)state;
    BwError err = {{0}};
    assert_int_equal(policy_python_print_doc(stdout, &err), BW_EUSAGE);
    assert_non_null(strstr(err.msg, "--python: this bellows was built without Python policies"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_python_policy_says_how_to_get_python),
        cmocka_unit_test(test_the_python_interface_is_not_printed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
