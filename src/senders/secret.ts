/** The `secret` every sender's settings carry. */
import { z } from 'zod';

export const secretSchema = z.string().min(1, 'must not be empty');
