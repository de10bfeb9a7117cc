# common/: linked into every program (see COMMON_OBJS in the Makefile).
$(eval $(call unit_test,common_buf,tests/unit/common/buf.c,,))
$(eval $(call unit_test,common_http1,tests/unit/common/http1.c,,))
$(eval $(call unit_test,common_config,tests/unit/common/config.c,,))
# common/http.c (MHD + JSON helpers) is linked into every program.
COMMON_PKGS += libmicrohttpd jansson
$(eval $(call unit_test,common_http,tests/unit/common/http.c,,))
$(eval $(call unit_test,common_link,tests/unit/common/link.c,,))
