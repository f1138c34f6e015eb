# A three-room tree for the LayeringCheckerCatches test: core < fabric < pe.
set(WSE_ROOMS core fabric pe)
set(WSE_ROOM_ALLOWED_core )
set(WSE_ROOM_ALLOWED_fabric core)
set(WSE_ROOM_ALLOWED_pe core fabric)
