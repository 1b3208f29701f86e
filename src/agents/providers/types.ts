/** The provider interface (kit/types.ts), for the worker and the turn. */
export * from './kit/types.js';
