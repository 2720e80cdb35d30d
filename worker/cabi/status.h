// Status codes of the inapack C ABI (worker/cabi); the Python package mirrors them.
#ifndef INAPACK_STATUS_H
#define INAPACK_STATUS_H
#include <stdint.h>
enum {
	INAPACK_OK = 0,
	INAPACK_ERROR = 1,       // anything else (transport, internal)
	INAPACK_ECONFIG = 2,     // bad configuration or argument
	INAPACK_ENOPROGRESS = 3, // no chunk completed for the progress timeout: switch, PS or a peer down
	INAPACK_EOVERFLOW = 4,   // an int32 sum does not fit in int32 (those values are saturated)
	INAPACK_ECLOSED = 5,     // a previous call failed; the worker cannot continue
};
#endif
