# install.cmake: what `cmake --install` puts where, and the Debian package
# (`cpack -G DEB` in the build directory).  Included by CMakeLists.txt.
#
# Paths are relative to the prefix (GNUInstallDirs), so one build serves
# `cmake --install build --prefix /usr/local` and CPack's /usr alike.
# The AppArmor profile attaches to /usr/bin/pinhole only, so it goes to
# /etc/apparmor.d only when the prefix is /usr (a system install, and the
# package); always to share/pinhole/apparmor, to copy by hand.
include(GNUInstallDirs)

install(TARGETS pinhole RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES docs/pinhole.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES docs/pinhole.conf.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES conf/pinhole.conf DESTINATION ${CMAKE_INSTALL_DATADIR}/pinhole)
install(DIRECTORY conf/profiles DESTINATION ${CMAKE_INSTALL_DATADIR}/pinhole
	FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# The broker's example configuration and a fleet's examples
# (docs/fleet.md).
install(FILES conf/broker.conf conf/gateway.conf
	DESTINATION ${CMAKE_INSTALL_DATADIR}/pinhole)
install(DIRECTORY conf/fleet DESTINATION ${CMAKE_INSTALL_DATADIR}/pinhole
	FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
install(FILES docs/fleet.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES dist/apparmor/usr.bin.pinhole
	DESTINATION ${CMAKE_INSTALL_DATADIR}/pinhole/apparmor)
install(FILES dist/systemd/pinhole-broker.socket
	dist/systemd/pinhole-broker.service
	DESTINATION lib/systemd/system)
install(FILES dist/sysusers.d/pinhole.conf DESTINATION lib/sysusers.d)
install(FILES dist/tmpfiles.d/pinhole.conf DESTINATION lib/tmpfiles.d)
# Decided at install time: CPack installs with the prefix /usr.
install(CODE "
	if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
		file(INSTALL \"${CMAKE_SOURCE_DIR}/dist/apparmor/usr.bin.pinhole\"
			DESTINATION /etc/apparmor.d)
	endif()")

set(CPACK_PACKAGE_NAME pinhole)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "pinhole maintainers <pinhole@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
	"sandbox whose only way out is a policy-checked egress proxy")
set(CPACK_PACKAGE_DESCRIPTION
	"pinhole run -- CMD runs CMD in user, mount, pid and network namespaces with seccomp and Landlock; its only way out is an HTTP egress proxy that allows the targets a policy names and injects credentials the sandbox never holds.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "apparmor")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
	${CMAKE_SOURCE_DIR}/dist/debian/postinst
	${CMAKE_SOURCE_DIR}/dist/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
