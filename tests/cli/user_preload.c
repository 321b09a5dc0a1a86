/* A shared object standing for the user's own LD_PRELOAD, which gotrace run must keep. */
int gt_cli_user_preload_marker;
