// poplar-py's stand-in for the IPU's <print.h>: printf from a codelet prints on the host.
#pragma once
#include <cstdio>
