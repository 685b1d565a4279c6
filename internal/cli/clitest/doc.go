// Package clitest tests the den binary from the outside: each test
// builds nothing itself but runs the binary that TestMain built once,
// with exec.Command, on a data dir and a config dir of its own, and
// checks what a user sees — output, exit codes, files on the host and
// processes left running.
//
// The helpers here (Build, Den, the process finders) are for those
// tests. A Den never reads the user's real configuration or data: it
// sets DEN_HOME and XDG_CONFIG_HOME to temporary folders. Every wait is
// bounded by a count of polls or a deadline that fails the test; no test
// asserts how long something took.
//
// The tests need bubblewrap, busybox (busybox-static), proot and tar;
// the MCP tests also need Node.js and npm (nodejs, npm) and, as root,
// debootstrap: they run the reference MCP servers, from npm packages
// and a Debian computer with Node.js that the first run caches
// (DEN_TEST_CACHE, else /var/cache/den-test as root). A missing tool
// fails the test when CI=true and skips it elsewhere.
package clitest
