DROP TABLE Projects;
