// Schedule: a cron expression that starts runs (docs/schedules.md); the
// schedules query, the create, pause, resume and delete mutations, and
// Run.schedule, the schedule whose firing started a run.
import type { ScheduleRecord } from "../storage/schedules/types.ts";
import { NotFoundError, ValidationError } from "../domain/errors.ts";
import { WebhookInput } from "./webhook.ts";
import { builder } from "./builder.ts";
import { Conversation, Node, Run, Schedule } from "./refs.ts";
import { pageQuery, toConnection } from "./connection.ts";

export const MissedPolicy = builder.enumType("MissedPolicy", {
  description: "What a schedule does about firings missed while no instance was running (found more than a minute late).",
  values: {
    SKIP: { value: "SKIP", description: "None of them runs; the schedule goes on from its next time after now." },
    RUN_ONCE: { value: "RUN_ONCE", description: "One run now, for all of them; then the next time after now." },
  } as const,
});

Schedule.implement({
  description:
    "A cron expression that starts runs: each firing is a run (Run.schedule names its schedule) started as the schedule's owner, through the queue, quotas and multitask like any other.",
  interfaces: [Node],
  fields: (t) => ({
    id: t.exposeID("id"),
    agent: t.exposeString("agent", { description: "The name of the agent each firing runs." }),
    cron: t.exposeString("cron", { description: "The cron expression (croner: 5 fields, or 6 with seconds first, or 7 with a year)." }),
    timezone: t.exposeString("timezone", { description: "The IANA time zone the expression is read in (DST included)." }),
    message: t.exposeString("message", { description: "The message each firing sends." }),
    conversation: t.field({
      type: Conversation,
      nullable: true,
      description: "The conversation each firing continues; null: each firing starts a new conversation.",
      resolve: (s, _a, ctx, info) => (s.conversationId ? ctx.reads(info.rootValue).conversation(s.conversationId) : null),
    }),
    owner: t.exposeString("owner", { description: "The principal that created it: firings run as it, and only it (and admins) sees it." }),
    paused: t.exposeBoolean("paused"),
    missedPolicy: t.field({ type: MissedPolicy, resolve: (s) => s.missedPolicy }),
    nextRunAt: t.expose("nextRunAt", {
      type: "DateTime",
      nullable: true,
      description: "The next firing's time (while paused, the one it had when paused); null when the expression has no more.",
    }),
    lastRun: t.field({
      type: Run,
      nullable: true,
      description: "The run of the latest firing that started one; null before any.",
      resolve: (s, _a, ctx, info) => (s.lastRunId ? ctx.reads(info.rootValue).run(s.lastRunId) : null),
    }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

builder.objectField(Run, "schedule", (t) =>
  t.field({
    type: Schedule,
    nullable: true,
    description: "The schedule whose firing started this run; null for a run no schedule started (or once the schedule is deleted).",
    resolve: (run, _a, ctx, info) => ctx.reads(info.rootValue).scheduleOf(run),
  }),
);

builder.queryField("schedule", (t) =>
  t.field({
    type: Schedule,
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => ctx.schedules.get(String(id), ctx.principal),
  }),
);

builder.queryField("schedules", (t) =>
  t.connection(
    {
      type: Schedule,
      description: "Oldest first: the caller's own schedules; an admin's, everyone's.",
      resolve: async (_root, args, ctx) => {
        const query = pageQuery(args);
        return toConnection(await ctx.schedules.list(query, ctx.principal), args, query);
      },
    },
    { name: "ScheduleConnection" },
    { name: "ScheduleEdge" },
  ),
);

const CreateScheduleInput = builder.inputType("CreateScheduleInput", {
  fields: (t) => ({
    agent: t.string({ required: true, description: "The agent each firing runs; with a conversationId, the conversation's own." }),
    cron: t.string({ required: true, description: 'A cron expression, parsed by croner: "0 9 * * 1-5", or with seconds first "*/30 * * * * *".' }),
    timezone: t.string({ required: true, description: "An IANA time zone name (Europe/Berlin, UTC)." }),
    message: t.string({ required: true }),
    conversationId: t.id({
      description: "Each firing is a new run on this conversation of the caller's (ENQUEUE behind a busy one); omit for a new conversation each time.",
    }),
    missedPolicy: t.field({ type: MissedPolicy, description: "Default SKIP." }),
    webhook: t.field({ type: WebhookInput, description: "Where to POST when each firing's run ends or waits." }),
  }),
});

const ScheduleInput = builder.inputType("ScheduleInput", {
  fields: (t) => ({ scheduleId: t.id({ required: true }) }),
});

const ScheduleSuccess = (name: string) =>
  builder.objectRef<{ schedule: ScheduleRecord }>(name).implement({
    fields: (t) => ({ schedule: t.field({ type: Schedule, resolve: (r) => r.schedule }) }),
  });

const CreateScheduleSuccess = ScheduleSuccess("CreateScheduleSuccess");
const PauseScheduleSuccess = ScheduleSuccess("PauseScheduleSuccess");
const ResumeScheduleSuccess = ScheduleSuccess("ResumeScheduleSuccess");

builder.mutationField("createSchedule", (t) =>
  t.field({
    type: CreateScheduleSuccess,
    description: "Records a schedule; a bad cron expression or time zone is a ValidationError and nothing is written.",
    args: { input: t.arg({ type: CreateScheduleInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError], directResult: true, union: { name: "CreateScheduleResult" } },
    resolve: async (_root, { input }, ctx) => ({
      schedule: await ctx.schedules.create(
        {
          agent: input.agent,
          cron: input.cron,
          timezone: input.timezone,
          message: input.message,
          conversationId: input.conversationId == null ? null : String(input.conversationId),
          missedPolicy: input.missedPolicy,
          webhook: input.webhook,
        },
        ctx.principal,
      ),
    }),
  }),
);

builder.mutationField("pauseSchedule", (t) =>
  t.field({
    type: PauseScheduleSuccess,
    description: "Stops its firings until resumed. Runs already started go on.",
    args: { input: t.arg({ type: ScheduleInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError], directResult: true, union: { name: "PauseScheduleResult" } },
    resolve: async (_root, { input }, ctx) => ({ schedule: await ctx.schedules.pause(String(input.scheduleId), ctx.principal) }),
  }),
);

builder.mutationField("resumeSchedule", (t) =>
  t.field({
    type: ResumeScheduleSuccess,
    description: "Fires again from its first time after now; what it would have fired while paused is not made up.",
    args: { input: t.arg({ type: ScheduleInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError], directResult: true, union: { name: "ResumeScheduleResult" } },
    resolve: async (_root, { input }, ctx) => ({ schedule: await ctx.schedules.resume(String(input.scheduleId), ctx.principal) }),
  }),
);

const DeleteScheduleSuccess = builder.objectRef<{ scheduleId: string }>("DeleteScheduleSuccess").implement({
  fields: (t) => ({ scheduleId: t.exposeID("scheduleId") }),
});

builder.mutationField("deleteSchedule", (t) =>
  t.field({
    type: DeleteScheduleSuccess,
    description: "Deletes the schedule and its firings; the runs it started stay.",
    args: { input: t.arg({ type: ScheduleInput, required: true }) },
    errors: { types: [ValidationError, NotFoundError], directResult: true, union: { name: "DeleteScheduleResult" } },
    resolve: async (_root, { input }, ctx) => ({ scheduleId: await ctx.schedules.delete(String(input.scheduleId), ctx.principal) }),
  }),
);
