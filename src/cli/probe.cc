#include "cli/commands.h"
namespace gpupack::cli {
void add_probe_command(CLI::App& app) { (void)app; }
}
