/** The fields the config sections of platforms and providers are made of, with the messages `config check` prints for them. */
import { z } from 'zod';

export const nonEmpty = z.string().min(1, 'must not be empty');
