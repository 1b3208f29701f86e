/** The fields platform config sections are made of, with the messages `config check` prints for them. */
import { z } from 'zod';

export const nonEmpty = z.string().min(1, 'must not be empty');
