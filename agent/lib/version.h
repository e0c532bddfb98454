/* The project's one version: every program prints it for --version, the
 * launcher writes it into the files it generates, the simulator into its
 * report's first line, the stub answers it on /version. */
#ifndef DBK_VERSION_H
#define DBK_VERSION_H

#define DBK_VERSION "0.1.0"

#endif
