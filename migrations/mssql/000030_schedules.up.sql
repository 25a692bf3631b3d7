-- migration: additive
-- Schedules (DESIGN.md 5b): what an admin declares (Schedules, versioned: its rowversion is
-- the ETag an update presents) apart from what the schedulers change at every firing
-- (ScheduleStates), so a firing never moves the ETag an admin holds. ScheduleStates.NextFireAt
-- is NULL while the schedule is paused; the filtered index is the schedulers' due scan across
-- tenants (like the reaper's), ordered by time. Row-level security is added in 000031
-- (ALTER SECURITY POLICY first in its batch).
SET XACT_ABORT ON;
BEGIN TRANSACTION;

CREATE TABLE [dbo].[Schedules] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ScheduleId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Cron] nvarchar(128) NOT NULL,
    [Timezone] nvarchar(64) NOT NULL,
    [RunSpec] nvarchar(max) NOT NULL,
    [Overlap] nvarchar(8) NOT NULL CONSTRAINT [CK_Schedules_Overlap] CHECK ([Overlap] IN (N'skip', N'allow')),
    [CatchupSeconds] int NOT NULL CONSTRAINT [CK_Schedules_Catchup] CHECK ([CatchupSeconds] >= 0),
    [Paused] bit NOT NULL,
    [Description] nvarchar(1000) NULL,
    [CreatedAt] datetimeoffset(3) NOT NULL,
    [UpdatedAt] datetimeoffset(3) NOT NULL,
    [UpdatedBy] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [Version] rowversion NOT NULL,
    CONSTRAINT [PK_Schedules] PRIMARY KEY CLUSTERED ([TenantId], [ScheduleId]),
    CONSTRAINT [FK_Schedules_Tenants] FOREIGN KEY ([TenantId]) REFERENCES [dbo].[Tenants] ([TenantId])
);

CREATE TABLE [dbo].[ScheduleStates] (
    [TenantId] nvarchar(64) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [ScheduleId] nvarchar(128) COLLATE Latin1_General_100_BIN2 NOT NULL,
    [NextFireAt] datetimeoffset(3) NULL,
    [LastFireAt] datetimeoffset(3) NULL,
    [LastRunId] uniqueidentifier NULL,
    [Fired] bigint NOT NULL,
    [SkippedOverlap] bigint NOT NULL,
    [SkippedCatchup] bigint NOT NULL,
    CONSTRAINT [PK_ScheduleStates] PRIMARY KEY CLUSTERED ([TenantId], [ScheduleId]),
    CONSTRAINT [FK_ScheduleStates_Schedules] FOREIGN KEY ([TenantId], [ScheduleId]) REFERENCES [dbo].[Schedules] ([TenantId], [ScheduleId])
);

CREATE INDEX [IX_ScheduleStates_Due] ON [dbo].[ScheduleStates] ([NextFireAt]) WHERE [NextFireAt] IS NOT NULL;

COMMIT TRANSACTION;
