/* Compiled as C: the client header is valid C, and its initializer gives every option its default. */
#include "client/include/gnnd_client.h"

gnnd_session_options gnnd_test_default_options(void) {
  gnnd_session_options options = GNND_SESSION_OPTIONS_INIT;
  return options;
}
