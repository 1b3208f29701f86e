/** Doctor's probe of `channels.discord`: `GET {apiBaseUrl}/users/@me` (`Bot` token). */
import { joinUrl } from '../../../http/outbound.js';
import { ok, type ProbeCall, refused, str } from '../../../http/probe.js';
import type { DiscordConfig } from './config.js';
import { DISCORD_USER_AGENT } from './send.js';

export function discordProbe(config: DiscordConfig, name: string): ProbeCall {
  return {
    request: {
      url: joinUrl(config.apiBaseUrl, 'users/@me'),
      headers: { authorization: `Bot ${config.botToken}`, 'user-agent': DISCORD_USER_AGENT },
    },
    secrets: [config.botToken],
    judge: (answer, say) =>
      answer.status === 200
        ? ok(name, say(`bot ${str(answer.json?.username) ?? '?'}`))
        : refused(name, answer, say, str(answer.json?.message), 'channels.discord.botToken'),
  };
}
