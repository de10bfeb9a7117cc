# common/: the static archive $(COMMON_LIB) (see the Makefile).  The modules
# that need a library, and which programs link them:
#   yconf.c            libyaml          (the supervisor, vivarium-egress)
#   mhd.c, guard.c, fileweb.c  libmicrohttpd, jansson  (the agent, the supervisor)
#   jsonrpc.c          jansson          (the agent, the supervisor)
# Every other module needs only libc.  A new common/*.c joins the archive by
# itself; add its library here and to the PKGS_ of the programs using it.
COMMON_PKGS += yaml-0.1 libmicrohttpd jansson

$(eval $(call embed,common/page_style,common/pages/page.css))
$(eval $(call embed,common/upload_script,common/pages/upload.js))

$(eval $(call unit_test,common_base64,tests/unit/common/base64.c,,))
$(eval $(call unit_test,common_hash,tests/unit/common/hash.c,,))
$(eval $(call unit_test,common_buf,tests/unit/common/buf.c,,))
$(eval $(call unit_test,common_http1,tests/unit/common/http1.c,,))
$(eval $(call unit_test,common_config,tests/unit/common/config.c,,))
$(eval $(call unit_test,common_origin,tests/unit/common/origin.c,,))
$(eval $(call unit_test,common_link,tests/unit/common/link.c,,))
$(eval $(call unit_test,common_jsonrpc,tests/unit/common/jsonrpc.c,,))
$(eval $(call unit_test,common_multipart,tests/unit/common/multipart.c,,))
$(eval $(call unit_test,common_text,tests/unit/common/text.c,,))
$(eval $(call unit_test,common_bearer,tests/unit/common/bearer.c,,))
$(eval $(call unit_test,common_proof,tests/unit/common/proof.c,,))
$(eval $(call unit_test,common_log,tests/unit/common/log.c,,))
$(eval $(call unit_test,common_guard,tests/unit/common/guard.c,,))
$(eval $(call unit_test,common_fdpass,tests/unit/common/fdpass.c,,))
