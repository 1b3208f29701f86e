/**
 * The two words of the heartbeat protocol shared by the scheduler and any
 * provider that simulates an agent (echo): the marker that starts every
 * heartbeat prompt, and the reply meaning "nothing needs attention".
 */
export const HEARTBEAT_MARKER = '[heartbeat]';
export const HEARTBEAT_OK = 'HEARTBEAT_OK';
