#!/bin/sh
# Stands in for the cmocka unit tests when configure did not find cmocka: a
# SKIP that says what was left out and how to get it, never a silent pass.
echo "SKIP: the cmocka unit tests were not built: cmocka >= 1.1 was not found when configure ran."
echo "      Install the Debian package libcmocka-dev (apt-get install libcmocka-dev) and run"
echo "      configure again, or use scripts/test, which installs it."
exit 77
